"""How train.yml's cost grows with the cluster: the test bed at 2, 8 and 16 hosts x 8 ranks (issue 10).

For each size a fresh bed is brought up (tests/testbed/bed.py), every device gets its bed IP, and
one successful ``train.yml`` runs every device (``np`` = hosts x 8; stand-in training of 3 s: 10
steps of 0.3 s; ``forks`` = hosts, so that every server is watched at once). Figures, one JSON
line each:

- ``train_to_start_s_<N>x8``: the playbook's start -> the last rank's own start timestamp
  (issue 10's target at 2 x 8: <= 5 s);
- ``train_tail_s_<N>x8``: the last rank's recorded exit -> the playbook's end (target: <= 2 s);
- ``train_controller_cpu_s_<N>x8``: CPU seconds of ``ansible-playbook`` and everything it waited for
  (its workers and their ssh clients; not the bed hosts' sshd or the ranks);
- ``train_controller_cpu_per_rank_s``: the slope of that CPU between the smallest and the largest
  size, per added rank (target: <= 0.1); with ``--repeat N`` the sizes run in turn N times (so that the
  machine's load drifts over all of them alike), each round's slope is printed and the figure is the slope
  of the sizes' median CPU;
- ``load_average_<N>x8``: the machine's load when the size finished (wall figures depend on it;
  the CPU ones hardly do).

The bed shares the controller's clock, so start and exit timestamps compare directly. Runs as root.

    .venv/bin/python bench/bench_train_scale.py [--hosts 2 8 16] [--repeat 1]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench._cpu import children_cpu  # noqa: E402
from tests.helpers.ansible_cli import run_playbook  # noqa: E402
from tests.testbed.harness import Bed, unique_prefix  # noqa: E402

TRAIN = REPO / "playbooks" / "train.yml"
STAND_IN = REPO / "examples" / "train" / "train_1p.sh"
DEVICES = 8
_START = re.compile(r"^start rank=(\d+) .* at (\d+\.\d+)", re.MULTILINE)


def emit(figure: str, value: float, **more: object) -> None:
    print(json.dumps({"figure": figure, "value": round(value, 3), "unit": "s", **more}), flush=True)


def give_device_ips(bed: Bed) -> None:
    """docs/testbed.md's plan: 198.19.<device>.<host index>/24."""
    for index, host in enumerate(bed.hosts, start=1):
        for device in range(DEVICES):
            bed.exec(host, "hccn_tool", "-i", str(device), "-ip", "-s", "address", f"198.19.{device}.{index}", "netmask", "255.255.255.0")


def one_size(hosts: int, root: Path, run: int = 0) -> float:
    """Run train.yml once on a fresh bed of ``hosts`` hosts; print its figures, return its CPU."""
    bed = Bed.up(unique_prefix(), hosts)
    try:
        give_device_ips(bed)
        ranks = hosts * DEVICES
        runs = root / f"runs{hosts}-{run}"
        extra = {
            "ascend_launch_run_root": str(runs),
            "ascend_launch_job_root": "/run/ascend-cluster/jobs",
            "ascend_launch_controller_dir": str(root / f"controller{hosts}-{run}"),
            "ascend_job_id": f"scale{hosts}",
            "np": ranks,
            "train_command": f"bash {STAND_IN}",
            "ascend_train_env": {"STEPS": "10", "STEP_S": "0.3"},
        }
        began, cpu = time.time(), children_cpu()
        result = run_playbook(TRAIN, bed.inventory, extra_vars=extra, env={"ANSIBLE_FORKS": str(hosts)}, timeout=1800)
        ended, cpu = time.time(), children_cpu() - cpu
        if result.rc != 0:
            raise SystemExit(f"train on {hosts} hosts failed:\n{result}")
        starts, exits = [], []
        for state_file in (runs / f"scale{hosts}").glob("device_*/state.json"):
            state = json.loads(state_file.read_text())
            match = _START.search((state_file.parent / "train.log").read_text())
            if match is None or state.get("rc") != 0:
                raise SystemExit(f"rank {state.get('rank_id')} has no start line or did not exit 0: {state}")
            starts.append(float(match.group(2)))
            exits.append(float(state["ended"]))
        if len(starts) != ranks:
            raise SystemExit(f"expected {ranks} ranks on {hosts} hosts, found {len(starts)}")
    finally:
        bed.down()
    where = f"testbed {hosts} hosts x {DEVICES} ranks over ssh, forks={hosts}"
    emit(f"train_to_start_s_{hosts}x{DEVICES}", max(starts) - began, where=where)
    emit(f"train_tail_s_{hosts}x{DEVICES}", ended - max(exits), where=where)
    emit(f"train_controller_cpu_s_{hosts}x{DEVICES}", cpu, where=where)
    print(json.dumps({"figure": f"load_average_{hosts}x{DEVICES}", "value": round(os.getloadavg()[0], 1), "unit": "1"}), flush=True)
    return cpu


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, nargs="+", default=[2, 8, 16])
    parser.add_argument("--repeat", type=int, default=1, help="rounds of every size, in turn (default 1)")
    args = parser.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("bench_train_scale needs root (the test bed uses network namespaces)")
    root = Path(tempfile.mkdtemp(prefix="bench-scale-", dir="/var/tmp"))
    rounds = [{hosts: one_size(hosts, root, run) for hosts in args.hosts} for run in range(max(1, args.repeat))]
    low, high = min(args.hosts), max(args.hosts)
    if high > low:
        between = [f"{low}x{DEVICES}", f"{high}x{DEVICES}"]
        if len(rounds) > 1:
            for run, cpu in enumerate(rounds):
                emit("train_controller_cpu_per_rank_s_round", slope(cpu[low], cpu[high], low, high), between=between, round=run)
        median = {hosts: statistics.median(cpu[hosts] for cpu in rounds) for hosts in (low, high)}
        emit("train_controller_cpu_per_rank_s", slope(median[low], median[high], low, high), between=between, runs=len(rounds))
    return 0


def slope(cpu_low: float, cpu_high: float, low: int, high: int) -> float:
    """Controller CPU per added rank between ``low`` and ``high`` servers of DEVICES ranks."""
    return (cpu_high - cpu_low) / ((high - low) * DEVICES)


if __name__ == "__main__":
    sys.exit(main())
