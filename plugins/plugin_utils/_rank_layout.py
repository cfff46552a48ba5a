# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The job's rank layout, computed once on the controller: every host's slice of the rank table.

The ``rank_table`` role calls this once (``run_once``) right after building the table and hands
each host its slice, so no host parses the table again (at 1000 servers x 16 devices, parsing it
once per host cost minutes of controller CPU, growing with servers squared).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ansible_collections.ascend.cluster.plugins.plugin_utils._chip_rules import resolve_chip
from ansible_collections.ascend.cluster.plugins.plugin_utils._errors import ClusterSpecError
from ansible_collections.ascend.cluster.plugins.plugin_utils._rank_table_formats import parse


def rank_layout(table: Mapping[str, Any], servers: Any) -> dict:
    """``{"rank_size", "rank0_server_id", "hosts": {host: [entry, ...]}}`` from one parse of ``table``.

    ``servers`` are the job's servers (``ascend_job_servers``: ``{host, server_id, ...}``); every
    one of them gets a slice, empty when the table has no rank on it. An entry is what
    ``rank_entries`` gives: ``rank_id``, ``device_id``, ``device_ip``, ``server_id``,
    ``local_index`` (position among the server's ranks), ``local_count`` (ranks on the server),
    sorted by ``rank_id``.
    """
    if not isinstance(servers, list):
        raise ClusterSpecError(f"servers must be a list of {{host, server_id}}, got {type(servers).__name__}")
    _version, parsed = parse(table, resolve_chip(None))
    by_server: dict = {}
    rank0 = None
    size = 0
    for server in parsed:
        ordered = sorted(server.devices, key=lambda d: d.rank_id)
        entries = by_server.setdefault(server.server_id, [])
        for device in ordered:
            entries.append(
                {
                    "rank_id": device.rank_id,
                    "device_id": device.device_id,
                    "device_ip": device.device_ip,
                    "server_id": server.server_id,
                    "local_index": len(entries),
                    "local_count": len(ordered),
                }
            )
            if device.rank_id == 0:
                rank0 = server.server_id
        size += len(ordered)
    hosts: dict = {}
    for index, server in enumerate(servers):
        if not isinstance(server, Mapping) or "host" not in server or "server_id" not in server:
            raise ClusterSpecError(f"servers[{index}] needs host and server_id, got {server!r}")
        if server["host"] in hosts:
            raise ClusterSpecError(f"host {server['host']} is listed twice in servers")
        hosts[server["host"]] = by_server.pop(str(server["server_id"]), [])
    if by_server:
        raise ClusterSpecError(f"the table has ranks on servers no host stands for: {', '.join(sorted(by_server))}")
    return {"rank_size": size, "rank0_server_id": rank0, "hosts": hosts}
