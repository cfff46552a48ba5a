# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter ``ascend.cluster.aoe_refusal``; documentation in ``aoe_refusal.yml``, logic in plugin_utils."""

from __future__ import annotations

from typing import Any

from ansible_collections.ascend.cluster.plugins.plugin_utils._errors import filter_errors


@filter_errors("aoe_refusal")
def aoe_refusal(
    hosts: Any, hostvars: Any, aoe: bool = False, use_library: bool | None = None, aoe_mode: int = 4, launcher: str = "per_device"
) -> str:
    # imported when called, not when Ansible loads the file (docs/contracts.md, filter files)
    from ansible_collections.ascend.cluster.plugins.plugin_utils._launch_checks import aoe_refusal as _aoe_refusal

    return _aoe_refusal(hosts, hostvars, aoe=aoe, use_library=use_library, aoe_mode=aoe_mode, launcher=launcher)


class FilterModule:
    def filters(self) -> dict:
        return {"aoe_refusal": aoe_refusal}
