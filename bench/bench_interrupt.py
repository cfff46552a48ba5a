"""Interrupt benchmark: ``ctrl_c_all_stopped_s`` of a watched ascend.cluster.train.

2 servers x 8 ranks of the stand-in command (examples/train/train_1p.sh, long run) on the
simulated local cluster (``--where sim``, the default when not root) or over real SSH on a 2-host
test bed (``--where bed``, the default as root). Once every rank runs and both servers' watchers are at work (each has
written its summary under the controller dir), the bench sends SIGINT to ansible-playbook's process
group, as a terminal's Ctrl-C would, and measures from that instant until every rank's training
process and runner is gone (checked every 20 ms in /proc). That includes the 1 s in which a second
Ctrl-C would leave the job running (``ascend_launch_interrupt_window_s``). Target <= 5 s.

Each figure is printed as ``{"figure": NAME, "value": NUMBER, "unit": "s", "where": ...}``.

    .venv/bin/python bench/bench_interrupt.py [--where bed|sim] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.bench_launch import STAND_IN, TRAIN, open_target  # noqa: E402
from tests.helpers.ansible_cli import start_playbook  # noqa: E402
from tests.helpers.procs import alive  # noqa: E402


def states(runs: Path, job_id: str) -> dict:
    found = {}
    for path in (runs / job_id).glob("device_*/state.json"):
        try:
            state = json.loads(path.read_text())
        except ValueError:
            continue
        found[state["rank_id"]] = state
    return found


def one_interrupt(inventory: Path, extra: dict, runs: Path, controller: Path, job_id: str) -> float:
    """Launch, Ctrl-C once the job is watched; seconds until every rank and runner is gone."""
    extra = dict(
        extra, np=16, ascend_job_id=job_id, train_command=f"bash {STAND_IN}", ascend_train_env={"STEPS": "100000", "STEP_S": "0.5"}
    )
    with open(runs.parent / f"{job_id}.out", "a") as out:
        proc = start_playbook(TRAIN, inventory, extra, out)
    try:
        deadline = time.monotonic() + 600
        while True:
            now = states(runs, job_id)
            watched = (controller / job_id / "group.json").exists()  # the watch keeps the group's view once it read it
            if len(now) == 16 and all(s.get("phase") == "running" for s in now.values()) and watched:
                break
            if proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"the job did not start and get watched; see {runs.parent / f'{job_id}.out'}")
            time.sleep(0.2)
        pids = [p for s in now.values() for p in (s["pid"], s["runner_pid"])]
        sent = time.monotonic()
        os.killpg(proc.pid, signal.SIGINT)
        while any(alive(p) for p in pids):
            if time.monotonic() - sent > 120:
                raise SystemExit("ranks still running 120 s after Ctrl-C")
            time.sleep(0.02)
        stopped = time.monotonic() - sent
        proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    ended = states(runs, job_id)
    if not all("Ctrl-C on the controller" in str(s.get("stopped_by", "")) for s in ended.values()):  # own, or through the group
        raise SystemExit(f"not every rank was stopped by the Ctrl-C: {ended}")
    return stopped


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--where", choices=["bed", "sim"], default="bed" if os.geteuid() == 0 else "sim")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="bench-interrupt-", dir="/var/tmp"))
    bed = None
    try:
        bed, (inventory, extra, runs), where = open_target(args.where, root)
        values = [one_interrupt(inventory, extra, runs, root / "controller", f"ctrlc{run}") for run in range(args.repeat)]
    finally:
        if bed is not None:
            bed.down()
    print(
        json.dumps(
            {
                "figure": "ctrl_c_all_stopped_s",
                "value": round(max(values), 3),
                "unit": "s",
                "where": where,
                "runs": [round(v, 3) for v in values],
                "statistic": "max",
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
