# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter ``ascend.cluster.smoke_summary``; documentation in ``smoke_summary.yml``."""

from __future__ import annotations

from typing import Any

from ansible_collections.ascend.cluster.plugins.plugin_utils._errors import filter_errors


@filter_errors("smoke_summary")
def smoke_summary(ranks: Any, health: Any = None, stages: Any = (), launched: bool = True) -> dict:
    # imported when called, not when Ansible loads the file (docs/contracts.md, filter files)
    from ansible_collections.ascend.cluster.plugins.plugin_utils._smoke import smoke_summary as _smoke_summary

    return _smoke_summary(ranks, health=health, stages=stages, launched=launched)


class FilterModule:
    def filters(self) -> dict:
        return {"smoke_summary": smoke_summary}
