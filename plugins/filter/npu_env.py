# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter ``ascend.cluster.npu_env``; documentation in ``npu_env.yml``."""

from __future__ import annotations

from typing import Any

from ansible_collections.ascend.cluster.plugins.plugin_utils._errors import filter_errors


@filter_errors("npu_env")
def npu_env(spec: Any, chip: str | None = None, np: Any = None, available: Any = None) -> list:
    # imported when called, not when Ansible loads the file (docs/contracts.md, filter files)
    from ansible_collections.ascend.cluster.plugins.plugin_utils._device_spec import parse_npu_env

    return parse_npu_env(spec, chip=chip, np=np, available=available)


class FilterModule:
    def filters(self) -> dict:
        return {"npu_env": npu_env}
