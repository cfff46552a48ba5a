# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter ``ascend.cluster.aoe_env_conflict``; documentation in ``aoe_env_conflict.yml``."""

from __future__ import annotations

from typing import Any

from ansible_collections.ascend.cluster.plugins.plugin_utils._errors import filter_errors


@filter_errors("aoe_env_conflict")
def aoe_env_conflict(
    env: Any, bank_dir: str, aoe: bool = False, aoe_mode: int = 4, use_library: Any = None, server: str = "this server"
) -> str:
    # imported when called, not when Ansible loads the file (docs/contracts.md, filter files)
    from ansible_collections.ascend.cluster.plugins.plugin_utils._aoe import aoe_env_conflict as _aoe_env_conflict

    return _aoe_env_conflict(env, bank_dir, aoe, aoe_mode, use_library, server)


class FilterModule:
    def filters(self) -> dict:
        return {"aoe_env_conflict": aoe_env_conflict}
