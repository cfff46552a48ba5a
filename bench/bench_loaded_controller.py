"""A healthy job must survive a loaded controller (issue 24 item 3): the test bed, ``--loops`` CPU-bound loops beside it.

On a 2-host test bed (2 x 8 ranks over real SSH), ``--loops`` busy loops (one Python process each, spinning) run on
this machine - the controller, and, the bed's hosts being namespaces of the same machine, their supervisors, the job's
coordinator and the ranks too - while ``train.yml`` runs a healthy job of ``--seconds`` seconds. The job must end with
every rank done: a server whose heartbeats are late under load is not a dead server. Figures, one JSON line each:

- ``loaded_job_ok``: 1 when the play succeeded and every rank exited 0, else 0 (and the play's last lines);
- ``loaded_job_wall_s``: the play's wall time; ``loaded_load_avg``: the load average at the end.

Runs as root (the bed uses network namespaces).

    .venv/bin/python bench/bench_loaded_controller.py [--loops 12] [--seconds 120]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.helpers.ansible_cli import run_playbook  # noqa: E402
from tests.helpers.runs import rank_states  # noqa: E402
from tests.testbed.harness import Bed, unique_prefix  # noqa: E402

TRAIN = REPO / "playbooks" / "train.yml"
STAND_IN = REPO / "examples" / "train" / "train_1p.sh"
STEP_S = 0.5


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n", maxsplit=1)[0])
    parser.add_argument("--loops", type=int, default=12)
    parser.add_argument("--seconds", type=float, default=120.0)
    args = parser.parse_args()
    prefix = unique_prefix()
    root = Path(tempfile.mkdtemp(prefix="loaded-", dir="/var/tmp"))
    loops: list = []
    try:
        bed = Bed.up(prefix, 2)
        for index, host in enumerate(bed.hosts, start=1):
            for device in range(8):
                bed.exec(
                    host, "hccn_tool", "-i", str(device), "-ip", "-s", "address", f"198.19.{device}.{index}", "netmask", "255.255.255.0"
                )
        loops = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _loop in range(args.loops)]  # pylint: disable=consider-using-with
        time.sleep(2.0)
        extra = {
            "np": 16,
            "ascend_job_id": "loaded",
            "train_command": f"bash {STAND_IN}",
            "ascend_train_env": {"STEPS": str(int(args.seconds / STEP_S)), "STEP_S": str(STEP_S)},
            "ascend_launch_run_root": f"{root}/runs",
            "ascend_launch_job_root": "/run/ascend-cluster/jobs",
            "ascend_launch_controller_dir": f"{root}/controller",
            "ascend_launch_stage_timeout_s": 300,
        }
        began = time.monotonic()
        res = run_playbook(TRAIN, bed.inventory, extra_vars=extra, timeout=args.seconds + 900)
        wall = time.monotonic() - began
        states = rank_states(root / "runs" / "loaded")
        ok = res.rc == 0 and len(states) == 16 and all(s.get("rc") == 0 for s in states.values())
        load = os.getloadavg()[0]
        for figure, value in (("loaded_job_ok", int(ok)), ("loaded_job_wall_s", round(wall, 1)), ("loaded_load_avg", round(load, 1))):
            print(json.dumps({"figure": figure, "value": value, "loops": args.loops, "job_s": args.seconds, "where": "bed"}), flush=True)
        if not ok:
            print(res.stdout[-3000:], flush=True)
        return 0 if ok else 1
    finally:
        for loop in loops:
            loop.kill()
            loop.wait()
        Bed(prefix).down()


if __name__ == "__main__":
    sys.exit(main())
