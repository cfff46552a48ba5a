"""Restart benchmark: ``recovery_in_place_s`` of ascend.cluster.train with ``-e max_restarts``.

2 servers x 8 ranks of the stand-in command (examples/train/train_1p.sh): rank 11 exits 1 once (``FAIL_ONCE_FILE``), the
launch decides a restart (after the failed attempt's report and diagnosis) and starts every rank again on the same servers,
through the pre-flight and the gate. The figure is the attempt record's ``restart_s`` in the last attempt's summary.json:
from the failing rank's end to every rank of the next attempt started (both in the controller's clock). Target <= 10 s
(issue 28, on the bed). ``restart_wall_s``: the whole train.yml run, both attempts.

On the simulated local cluster (``--where sim``, the default when not root) or over real SSH on a 2-host test bed
(``--where bed``, the default as root). Each figure is printed as ``{"figure": NAME, "value": NUMBER, "unit": "s", ...}``.

    .venv/bin/python bench/bench_restart.py [--where bed|sim] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.bench_launch import STAND_IN, TRAIN, open_target  # noqa: E402
from tests.helpers.ansible_cli import run_playbook  # noqa: E402


def one_restart(inventory: Path, extra: dict, root: Path, job_id: str) -> tuple[float, float]:
    """``(restart_s, wall_s)`` of one job whose rank 11 fails once."""
    env = {"STEPS": "20", "STEP_S": "0.1", "FAIL_RANK": "11", "FAIL_STEP": "5", "FAIL_ONCE_FILE": str(root / f"{job_id}.failed")}
    began = time.monotonic()
    res = run_playbook(
        TRAIN,
        inventory,
        extra_vars=dict(extra, np=16, ascend_job_id=job_id, ascend_train_env=env, train_command=f"bash {STAND_IN}", max_restarts=1),
        timeout=1200,
    )
    wall = time.monotonic() - began
    if res.rc != 0:
        raise SystemExit(f"the restarted job did not succeed:\n{str(res)[-3000:]}")
    summary = json.loads((root / "controller" / f"{job_id}-r1" / "summary.json").read_text())
    (attempt,) = summary["attempts"]
    return float(attempt["restart_s"]), wall


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--where", choices=["bed", "sim"], default="bed" if os.geteuid() == 0 else "sim")
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="bench-restart-", dir="/var/tmp"))
    bed = None
    try:
        bed, (inventory, extra, _runs), where = open_target(args.where, root)
        restarts, walls = [], []
        for run in range(args.repeat):
            restart_s, wall = one_restart(inventory, extra, root, f"restart{run}")
            restarts.append(restart_s)
            walls.append(wall)
        for name, values in (("recovery_in_place_s", restarts), ("restart_wall_s", walls)):
            print(
                json.dumps(
                    {
                        "figure": name,
                        "value": round(max(values), 3),
                        "unit": "s",
                        "where": where,
                        "runs": [round(v, 3) for v in values],
                        "statistic": "max",
                    }
                )
            )
    finally:
        if bed is not None:
            bed.down()
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
