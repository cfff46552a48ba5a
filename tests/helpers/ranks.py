"""One rank as the launch hands it to a server (an element of ``training_ranks``' ``ranks``, what
``module_utils/_job/env.rank_env`` reads), for the tests of the per-rank environment."""

from __future__ import annotations

from typing import Any


def rank_entry(rank_id: int, host_ip: str, **more: Any) -> dict[str, Any]:
    """Rank ``rank_id`` of 16 on ``host_ip``: device 3, local rank 3 of 8, master 10.0.0.1:29500; ``more`` overrides."""
    return {
        "rank_id": rank_id,
        "device_id": 3,
        "rank_size": 16,
        "local_rank": 3,
        "local_count": 8,
        "rank_table_path": "/etc/ascend/rank_table.json",
        "master_addr": "10.0.0.1",
        "master_port": 29500,
        "host_ip": host_ip,
        **more,
    }
