"""Test data: servers as a playbook gathers them from hccn_facts, and the seeds' tables.

The device IP plans follow the seed documents (not the tables themselves), so a test that
feeds these servers to ``rank_table`` and compares with a seed table really checks the filter.
"""

from __future__ import annotations

import json
from pathlib import Path

FIXTURES = Path(__file__).parent / "seed_tables"


def seed_table(name: str) -> dict:
    """A table copied verbatim from a seed document (see seed_tables/)."""
    return json.loads((FIXTURES / name).read_text())


def server(server_id: str, ips: dict[int, str], **extra) -> dict:
    """One server in the shape hccn_facts results give: int device ids, str device IPs."""
    return {"server_id": server_id, "devices": [{"device_id": i, "device_ip": ip} for i, ip in ips.items()], **extra}


def seed001_server(server_id: str, last_octet: int) -> dict:
    """Seed 001 plan: device d has 192.<d%4+1>.27.<last_octet + d//4> (devices 0-3 / 4-7)."""
    return server(server_id, {d: f"192.{d % 4 + 1}.27.{last_octet + d // 4}" for d in range(8)})


def seed002_server() -> dict:
    """Seed 002/004 plan (SMP): device d has 192.168.<100 + d%4>.<101 - d//4>."""
    return server("127.0.0.1", {d: f"192.168.{100 + d % 4}.{101 - d // 4}" for d in range(8)})


def seed003_server(server_id: str, first_host: int) -> dict:
    """Seed 003 plan: device d has 192.168.<10*(d%4+1)>.<first_host + d//4>."""
    return server(server_id, {d: f"192.168.{10 * (d % 4 + 1)}.{first_host + d // 4}" for d in range(8)})


def a2_cluster(servers: int, per_server: int = 16) -> list[dict]:
    """A large A2/A3-style cluster with unique device IPs (AMP: one subnet per server)."""
    return [
        server(
            f"10.{s >> 8}.{s & 255}.1",
            {d: f"172.{16 + (s >> 12)}.{(s >> 4) & 255}.{((s & 15) << 4) | d}" for d in range(per_server)},
        )
        for s in range(servers)
    ]


def superpod_cluster(servers: int = 2, per_server: int = 16) -> list[dict]:
    """An A3 SuperPoD: host_ip and super_pod_id per server, super_device_id per device."""
    result = []
    for s in range(servers):
        entry = server(f"10.1.0.{s + 1}", {d: f"172.20.{s}.{d + 1}" for d in range(per_server)})
        entry.update(host_ip=f"10.1.0.{s + 1}", super_pod_id="0")
        for d in entry["devices"]:
            d["super_device_id"] = str(s * per_server + d["device_id"])
        result.append(entry)
    return result
