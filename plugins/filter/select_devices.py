# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter ``ascend.cluster.select_devices``; documentation in ``select_devices.yml``."""

from __future__ import annotations

from typing import Any

from ansible_collections.ascend.cluster.plugins.plugin_utils._errors import filter_errors


@filter_errors("select_devices")
def select_devices(servers: Any, np: Any, chip: str | None = None, allow_partial_servers: bool = False, spread: bool = False) -> list:
    # imported when called, not when Ansible loads the file (docs/contracts.md, filter files)
    from ansible_collections.ascend.cluster.plugins.plugin_utils._select import select_devices as _select

    return _select(servers, np, chip=chip, allow_partial_servers=allow_partial_servers, spread=spread)


class FilterModule:
    def filters(self) -> dict:
        return {"select_devices": select_devices}
