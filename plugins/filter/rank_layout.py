# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter ``ascend.cluster.rank_layout``; documentation in ``rank_layout.yml``."""

from __future__ import annotations

from typing import Any

from ansible_collections.ascend.cluster.plugins.plugin_utils._errors import filter_errors


@filter_errors("rank_layout")
def rank_layout(table: Any, servers: Any) -> dict:
    """Every host's slice of ``table`` (one parse), the rank size and rank 0's server."""
    # imported when called, not when Ansible loads the file (docs/contracts.md, filter files)
    from ansible_collections.ascend.cluster.plugins.plugin_utils._rank_layout import rank_layout as _rank_layout

    return _rank_layout(table, servers)


class FilterModule:
    def filters(self) -> dict:
        return {"rank_layout": rank_layout}
