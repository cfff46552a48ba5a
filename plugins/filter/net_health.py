# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The net_health role's filters: netdetect targets, the ping mesh, the cluster's link and health table.

Filters ``ascend.cluster.net_health_targets_by_host``, ``ascend.cluster.ping_mesh_targets``,
``ascend.cluster.net_health_report``; each documented in the YAML file of its name beside this one."""

from __future__ import annotations

from typing import Any

from ansible_collections.ascend.cluster.plugins.plugin_utils._errors import ClusterSpecError, filter_errors


@filter_errors("net_health_targets_by_host")
def net_health_targets_by_host(servers: Any, mode: str, changes_only: bool = False, ring: Any = None) -> dict:
    # imported when called, not when Ansible loads the file (docs/contracts.md, filter files)
    from ansible_collections.ascend.cluster.plugins.plugin_utils._net.net_health import netdetect_targets_by_host

    return netdetect_targets_by_host(servers, mode, changes_only=bool(changes_only), ring=ring)


@filter_errors("ping_mesh_targets")
def ping_mesh_targets(servers: Any, host: str, mode: str = "sampled") -> list:
    # imported when called, not when Ansible loads the file (docs/contracts.md, filter files)
    from ansible_collections.ascend.cluster.plugins.plugin_utils._net.net_health import server_facts
    from ansible_collections.ascend.cluster.plugins.plugin_utils._net.ping_mesh import ping_targets

    if isinstance(servers, (str, dict)) or not isinstance(servers, (list, tuple)):
        raise ClusterSpecError("the input must be a list of hosts' variables (ansible_play_hosts | map('extract', hostvars))")
    pairs = []
    for index, item in enumerate(servers):
        name, npu = server_facts(item, index)
        pairs.append((name, npu.get("devices") or []))
    return ping_targets(pairs, host, mode)


@filter_errors("net_health_report")
def net_health_report(
    servers: Any,
    chip: str | None = None,
    layout: str | None = "auto",
    check_tls: bool = True,
    check_conf: bool = True,
    check_mode: bool = False,
    all_rows: bool = False,
    ok_rows: int = 4,
    left_out: Any = (),
) -> dict:
    # imported when called, not when Ansible loads the file (docs/contracts.md, filter files)
    from ansible_collections.ascend.cluster.plugins.plugin_utils._net.net_health import health_report, health_summary

    report = health_report(servers, chip=chip or None, layout=layout, check_tls=check_tls, check_conf=check_conf, check_mode=check_mode)
    return health_summary(report, all_rows=all_rows, ok_rows=ok_rows, check_mode=check_mode, left_out=left_out or ())


# Every filter of this file, registered under its function's name (the name its YAML documentation has).
FILTERS = (net_health_targets_by_host, ping_mesh_targets, net_health_report)


class FilterModule:
    def filters(self) -> dict:
        return {function.__name__: function for function in FILTERS}
