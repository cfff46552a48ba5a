"""Benchmark: build and validate rank tables of 1024, 16384 and 65536 ranks (16 devices per server).

Prints one JSON object per line, e.g. ``{"figure": "rank_table_65536_ranks_s", "value": 0.42, "unit": "s"}``:

- ``rank_table_<N>_ranks_s``: ``servers | ascend.cluster.rank_table`` (read, check as HCCL
  does, render) for N ranks, best of a few runs; the budget for 65536 is 1.0 s and the three
  sizes show the cost growing linearly;
- ``validate_rank_table_<N>_ranks_s``: reading the table back through ``validate_rank_table``;
- ``rank_layout_1000x16_cpu_s``: the controller work of train's layout step for 1000 servers x 16
  devices, as the rank_table role does it: build the table, lay it out per server in one pass
  (``rank_layout``) and hand each of the 1000 hosts its slice (issue 10's target: <= 2 s).

Times are the CPU time of this process (``time.process_time``), best of a few runs: on an idle
machine that equals wall time for this single-threaded work, and it does not count the time other
processes on a busy (shared CI) machine take from us.

Run from the repository root: ``.venv/bin/python bench/bench_rank_table.py``.
"""

from __future__ import annotations

import functools
import json
import sys
import time
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.helpers.collection import install_import_path

install_import_path()

from ansible_collections.ascend.cluster.plugins.filter.rank_table import (  # noqa: E402
    rank_layout,
    rank_table,
    validate_rank_table,
)

DEVICES_PER_SERVER = 16
SIZES = (1024, 16384, 65536)
REPEATS = 5
LAYOUT_SERVERS = 1000


def cluster(ranks: int) -> list[dict[str, Any]]:
    """Servers as hccn_facts gives them: unique host and device IPs, int device ids."""
    servers = []
    for s in range(ranks // DEVICES_PER_SERVER):
        devices = [
            {"device_id": d, "device_ip": f"172.{16 + (s >> 12)}.{(s >> 4) & 255}.{((s & 15) << 4) | d}"} for d in range(DEVICES_PER_SERVER)
        ]
        servers.append({"server_id": f"10.{s >> 8}.{s & 255}.1", "devices": devices})
    return servers


def layout_step(servers: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Build, lay out, and give every host its slice: what train does once on the controller."""
    table = rank_table(servers, chip="910B")
    layout = rank_layout(table, servers)
    return {server["host"]: layout["hosts"][server["host"]] for server in servers}


def best_of(func: Callable[[], Any], repeats: int = REPEATS) -> float:
    best = float("inf")
    for _repeat in range(repeats):
        start = time.process_time()
        func()
        best = min(best, time.process_time() - start)
    return best


def emit(figure: str, value: float) -> None:
    print(json.dumps({"figure": figure, "value": round(value, 4), "unit": "s"}), flush=True)


def main() -> None:
    for ranks in SIZES:
        servers = cluster(ranks)
        table = rank_table(servers, chip="910B")
        assert int(table["server_count"]) * DEVICES_PER_SERVER == ranks
        emit(f"rank_table_{ranks}_ranks_s", best_of(functools.partial(rank_table, servers, chip="910B")))
        emit(f"validate_rank_table_{ranks}_ranks_s", best_of(functools.partial(validate_rank_table, table, chip="910B")))
    servers = [dict(server, host=f"server{index}") for index, server in enumerate(cluster(LAYOUT_SERVERS * DEVICES_PER_SERVER))]
    slices = layout_step(servers)
    assert len(slices) == LAYOUT_SERVERS and all(len(ranks) == DEVICES_PER_SERVER for ranks in slices.values())
    emit(f"rank_layout_{LAYOUT_SERVERS}x{DEVICES_PER_SERVER}_cpu_s", best_of(functools.partial(layout_step, servers)))


if __name__ == "__main__":
    main()
