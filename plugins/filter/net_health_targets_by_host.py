# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter ``ascend.cluster.net_health_targets_by_host``; documentation in ``net_health_targets_by_host.yml``."""

from __future__ import annotations

from typing import Any

from ansible_collections.ascend.cluster.plugins.plugin_utils._errors import filter_errors


@filter_errors("net_health_targets_by_host")
def net_health_targets_by_host(servers: Any, mode: str, changes_only: bool = False, ring: Any = None) -> dict:
    # imported when called, not when Ansible loads the file (docs/contracts.md, filter files)
    from ansible_collections.ascend.cluster.plugins.plugin_utils._net_health import netdetect_targets_by_host

    return netdetect_targets_by_host(servers, mode, changes_only=bool(changes_only), ring=ring)


class FilterModule:
    def filters(self) -> dict:
        return {"net_health_targets_by_host": net_health_targets_by_host}
