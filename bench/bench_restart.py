"""Restart benchmark: ``recovery_in_place_s`` and ``recovery_spare_s`` of ascend.cluster.train with ``-e max_restarts``.

2 servers x 8 ranks of the stand-in command (examples/train/train_1p.sh): rank 11 exits 1 once (``FAIL_ONCE_FILE``), the
launch decides a restart (after the failed attempt's report and diagnosis) and starts every rank again on the same servers,
through the pre-flight and the gate. The figure is the attempt record's ``restart_s`` in the last attempt's summary.json:
from the failing rank's end to every rank of the next attempt started (both in the controller's clock). Target <= 10 s
(issue 28, on the bed). ``restart_wall_s``: the whole train.yml run, both attempts.

``recovery_spare_s`` (``--figure spare``, bed only: a 3-host bed, h3 in the inventory group ``ascend_spares``): 16 ranks
on h1 and h2; once they run, h2's management link goes down (to the controller and h1, h2 has died). The job's group finds
it lost, the launch leaves h2 out, reads h3's NPUs, lays the job out on h1 + h3 and starts every rank there through the
pre-flight and the gate. The figure is the same ``restart_s``: from the failure known (the first-attempt ranks' end, when
the group stopped them) to every rank of the next attempt started on h1 and h3. Target <= 20 s (issue 28).
``spare_wall_s`` / ``spare_cpu_s``: the whole run and the CPU seconds of the controller's processes (ansible-playbook and
its workers, as ``children_cpu`` counts them).

On the simulated local cluster (``--where sim``, the default when not root) or over real SSH on a test bed (``--where bed``,
the default as root). Each figure is printed as ``{"figure": NAME, "value": NUMBER, "unit": "s", ...}``.

    .venv/bin/python bench/bench_restart.py [--where bed|sim] [--figure in_place|spare|all] [--repeat 3]
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

from bench._cpu import children_cpu  # noqa: E402
from bench.bench_launch import STAND_IN, TRAIN, open_target  # noqa: E402
from tests.helpers.ansible_cli import run_playbook, start_playbook  # noqa: E402
from tests.helpers.procs import reap, wait_for  # noqa: E402
from tests.helpers.runs import rank_states  # noqa: E402


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


def one_spare(bed, inventory: Path, extra: dict, root: Path, job_id: str) -> tuple[float, float, float]:
    """``(restart_s, wall_s, cpu_s)`` of one job whose h2 dies once its 16 ranks run; h3 is a spare."""
    where = root / f"{job_id}-inventory"
    where.mkdir()
    (where / "hosts.yml").symlink_to(inventory)
    (where / "spares.yml").write_text("ascend_spares:\n  hosts:\n    h3:\n")
    env = {"STEPS": "80", "STEP_S": "0.25"}
    extra = dict(extra, np=16, ascend_job_id=job_id, ascend_train_env=env, train_command=f"bash {STAND_IN}", max_restarts=1)
    output = root / f"{job_id}.out"
    began, cpu = time.monotonic(), children_cpu()
    with open(output, "w") as out:
        proc = start_playbook(TRAIN, where, extra, out)
    try:
        runs = root / "runs" / job_id
        wait_for(lambda: runs.exists() and sum(s.get("phase") == "running" for s in rank_states(runs).values()) == 16, 300, "16 ranks")
        time.sleep(1.0)
        with bed.dead("h2"):
            proc.wait(timeout=600)
    finally:
        reap(proc)
    wall, cpu = time.monotonic() - began, children_cpu() - cpu
    if proc.returncode != 0:
        raise SystemExit(f"the job did not finish on h1 + h3:\n{output.read_text()[-3000:]}")
    summary = json.loads((root / "controller" / f"{job_id}-r1" / "summary.json").read_text())
    (attempt,) = summary["attempts"]
    if attempt["taken_in"] != ["h3"]:
        raise SystemExit(f"h3 was not taken in: {attempt}")
    # h2's first-attempt ranks, cut off, stop themselves once they lose the coordinator: let them end before the next run
    wait_for(lambda: all(s.get("phase") == "exited" for s in rank_states(root / "runs" / job_id).values()), 60, "h2's ranks to stop")
    return float(attempt["restart_s"]), wall, cpu


def report(name: str, values: list, where: str) -> None:
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--where", choices=["bed", "sim"], default="bed" if os.geteuid() == 0 else "sim")
    parser.add_argument("--figure", choices=["in_place", "spare", "all"], default="in_place")
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    if args.figure != "in_place" and args.where != "bed":
        parser.error("recovery_spare_s needs the test bed (--where bed, as root): a simulated server cannot die")
    root = Path(tempfile.mkdtemp(prefix="bench-restart-", dir="/var/tmp"))
    bed = None
    try:
        bed, (inventory, extra, _runs), where = open_target(args.where, root, hosts=3 if args.figure != "in_place" else 2)
        if args.figure in ("in_place", "all"):
            restarts, walls = [], []
            for run in range(args.repeat):
                restart_s, wall = one_restart(inventory, extra, root, f"restart{run}")
                restarts.append(restart_s)
                walls.append(wall)
            report("recovery_in_place_s", restarts, where)
            report("restart_wall_s", walls, where)
        if args.figure in ("spare", "all"):
            spares, walls, cpus = [], [], []
            for run in range(args.repeat):
                restart_s, wall, cpu = one_spare(bed, inventory, extra, root, f"spare{run}")
                spares.append(restart_s)
                walls.append(wall)
                cpus.append(cpu)
            report("recovery_spare_s", spares, where)
            report("spare_wall_s", walls, where)
            report("spare_cpu_s", cpus, where)
    finally:
        if bed is not None:
            bed.down()
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
