# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter ``ascend.cluster.launch_layout``; documentation in ``launch_layout.yml``."""

from __future__ import annotations

from typing import Any

from ansible_collections.ascend.cluster.plugins.plugin_utils._errors import filter_errors


@filter_errors("launch_layout")
def launch_layout(hosts: Any, slices: Any, aoe: bool = False, per_node: bool = False) -> dict:
    """Rank 0's host, the hosts that stage and join the job's group, the AOE host and the per-node launcher's numbering."""
    # imported when called, not when Ansible loads the file (docs/contracts.md, filter files)
    from ansible_collections.ascend.cluster.plugins.plugin_utils._rank_layout import launch_layout as _launch_layout

    return _launch_layout(hosts, slices, aoe=bool(aoe), per_node=bool(per_node))


class FilterModule:
    def filters(self) -> dict:
        return {"launch_layout": launch_layout}
