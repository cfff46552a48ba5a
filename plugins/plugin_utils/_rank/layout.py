# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The job's rank layout, computed once on the controller: the one producer of rank entries, each host's slice of the
rank table, and the launch's roles of the servers.

- :func:`entries`: the table's ranks in rank order, each with its server and its place among the server's ranks
  (``local_index`` / ``local_count``); the ``rank_entries`` filter is this.
- :func:`rank_layout`: every host's slice. The ``rank_table`` role calls it once (``run_once``) right after building the
  table and hands each host its slice, so no host parses the table again (at 1000 servers x 16 devices, parsing it once
  per host cost minutes of controller CPU, growing with servers squared).
- :func:`launch_layout`: from those slices, what the launch needs of the servers - rank 0's server (the job's group
  coordinator), the servers that stage ranks and join the group, the AOE tuning server, and each server's node rank
  for a per-node launcher (rank 0's server is node 0, then by lowest rank).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ansible_collections.ascend.cluster.plugins.plugin_utils._errors import ClusterSpecError
from ansible_collections.ascend.cluster.plugins.plugin_utils._rank.chip_rules import resolve_chip
from ansible_collections.ascend.cluster.plugins.plugin_utils._rank.formats import parse


def entries(table: Mapping[str, Any]) -> list:
    """Every rank of ``table`` (any supported format), sorted by ``rank_id``: ``rank_id``, ``device_id``, ``device_ip``,
    ``server_id``, ``local_index`` (position among the server's ranks, by rank) and ``local_count`` (ranks on the server)."""
    _version, parsed = parse(table, resolve_chip(None))
    found = [
        {
            "rank_id": device.rank_id,
            "device_id": device.device_id,
            "device_ip": device.device_ip,
            "server_id": server.server_id,
            "local_index": index,
            "local_count": len(server.devices),
        }
        for server in parsed
        for index, device in enumerate(sorted(server.devices, key=lambda d: d.rank_id))
    ]
    return sorted(found, key=lambda e: e["rank_id"])


def rank_layout(table: Mapping[str, Any], servers: Any) -> dict:
    """``{"rank_size", "rank0_server_id", "hosts": {host: [entry, ...]}}`` from one parse of ``table``.

    ``servers`` are the job's servers (``ascend_job_servers``: ``{host, server_id, ...}``); every
    one of them gets a slice, empty when the table has no rank on it. An entry is what
    :func:`entries` gives, sorted by ``rank_id``.
    """
    if not isinstance(servers, list):
        raise ClusterSpecError(f"servers must be a list of {{host, server_id}}, got {type(servers).__name__}")
    by_server: dict = {}
    rank0 = None
    ranks = entries(table)
    for entry in ranks:
        by_server.setdefault(entry["server_id"], []).append(entry)
        if entry["rank_id"] == 0:
            rank0 = entry["server_id"]
    size = len(ranks)
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


def launch_layout(hosts: Any, slices: Any, aoe: bool = False, per_node: bool = False) -> dict:
    """What the launch needs of its servers, from each host's slice (``rank_layout``'s ``hosts``, in the play's order).

    ``hosts``: the play's hosts in order; ``slices``: each one's ranks (``ascend_local_ranks``; empty or missing: none).
    Returns ``coordinator`` (the host holding rank 0: the job's group coordinator, also the AOE tuning server),
    ``aoe_host`` (that host with ``aoe``, else ``""``), ``group_hosts`` (the hosts that start a process: every host with
    ranks; with ``aoe`` rank 0's only), ``staging_hosts`` (the hosts whose stage tasks the coordinator's waits for; none
    with ``aoe``), ``node_rank`` (``{host: n}`` for a per-node launcher: rank 0's server is node 0, then by lowest rank;
    empty without ``per_node``) and ``nnodes`` (1 without ``per_node``).
    """
    if not isinstance(hosts, list) or not isinstance(slices, list) or len(hosts) != len(slices):
        raise ClusterSpecError("launch_layout needs the play's hosts and one list of ranks for each")
    taking_part: list = []
    lowest: dict = {}
    coordinator = ""
    for host, ranks in zip(hosts, slices):
        ids = [int(rank["rank_id"]) for rank in ranks or []]
        if not ids:
            continue
        taking_part.append(host)
        lowest[host] = min(ids)
        if 0 in ids and not coordinator:
            coordinator = host
    if taking_part and not coordinator:
        raise ClusterSpecError("no host holds rank 0: the layout is not a whole rank table's")
    nodes = sorted(taking_part, key=lambda h: lowest[h]) if per_node else []
    return {
        "coordinator": coordinator,
        "aoe_host": coordinator if aoe else "",
        "group_hosts": [coordinator] if aoe and coordinator else taking_part,
        "staging_hosts": [] if aoe else taking_part,
        "node_rank": {host: index for index, host in enumerate(nodes)},
        "nnodes": len(nodes) if per_node else 1,
    }
