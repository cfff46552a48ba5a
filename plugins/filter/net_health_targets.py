# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter ``ascend.cluster.net_health_targets``; documentation in ``net_health_targets.yml``."""

from __future__ import annotations

from typing import Any

from ansible_collections.ascend.cluster.plugins.plugin_utils._errors import filter_errors


@filter_errors("net_health_targets")
def net_health_targets(devices: Any, mode: str, peer_devices: Any = ()) -> list:
    # imported when called, not when Ansible loads the file (docs/contracts.md, filter files)
    from ansible_collections.ascend.cluster.plugins.plugin_utils._net_health import netdetect_targets

    return netdetect_targets(devices, mode, peer_devices)


class FilterModule:
    def filters(self) -> dict:
        return {"net_health_targets": net_health_targets}
