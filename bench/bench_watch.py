"""What watching a running job costs the controller: CPU seconds per server per second of the job (issue 10).

On one test bed of ``--hosts`` hosts x 8 ranks, ``train.yml`` runs a short job (stand-in training of ``--short`` s)
and a long one (``--long`` s), in turn ``--repeat`` times. Everything but the watch is the same in both, so the
difference of their controller CPU (``ansible-playbook`` and everything it waited for: workers, ssh clients, the
probes' shell sessions), divided by the difference of their jobs' wall time (first rank start to last rank end)
and by the hosts, is what one server's watch costs per second. Figures, one JSON line each:

- ``watch_cpu_per_server_s``: the median over the rounds (docs/launch.md multiplies it by 1000 servers);
- ``watch_round``: each round's short and long CPU and job seconds.

Runs as root (the bed uses network namespaces).

    .venv/bin/python bench/bench_watch.py [--hosts 2] [--short 3] [--long 18] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.bench_train_scale import DEVICES, STAND_IN, TRAIN, children_cpu, give_device_ips  # noqa: E402
from tests.helpers.ansible_cli import run_playbook  # noqa: E402
from tests.testbed.harness import Bed, unique_prefix  # noqa: E402

STEP_S = 0.3


def one_job(bed: Bed, root: Path, job_id: str, seconds: float) -> tuple[float, float]:
    """(controller CPU, the job's wall seconds) of one successful train.yml of ``seconds`` of stand-in training."""
    hosts = len(bed.hosts)
    runs = root / f"runs-{job_id}"
    extra = {
        "ascend_launch_run_root": str(runs),
        "ascend_launch_job_root": "/run/ascend-cluster/jobs",
        "ascend_launch_controller_dir": str(root / f"controller-{job_id}"),
        "ascend_job_id": job_id,
        "np": hosts * DEVICES,
        "train_command": f"bash {STAND_IN}",
        "ascend_train_env": {"STEPS": str(max(1, round(seconds / STEP_S))), "STEP_S": str(STEP_S)},
    }
    cpu = children_cpu()
    result = run_playbook(TRAIN, bed.inventory, extra_vars=extra, env={"ANSIBLE_FORKS": str(hosts)}, timeout=1800)
    cpu = children_cpu() - cpu
    if result.rc != 0:
        raise SystemExit(f"train {job_id} failed:\n{result}")
    states = [json.loads(p.read_text()) for p in (runs / job_id).glob("device_*/state.json")]
    if len(states) != hosts * DEVICES or any(s.get("rc") != 0 for s in states):
        raise SystemExit(f"train {job_id}: expected {hosts * DEVICES} ranks that exited 0, found {states}")
    return cpu, max(float(s["ended"]) for s in states) - min(float(s["started"]) for s in states)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=2)
    parser.add_argument("--short", type=float, default=3.0, help="seconds of the short job (default 3)")
    parser.add_argument("--long", type=float, default=18.0, help="seconds of the long job (default 18)")
    parser.add_argument("--repeat", type=int, default=3, help="rounds of short and long job (default 3)")
    args = parser.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("bench_watch needs root (the test bed uses network namespaces)")
    root = Path(tempfile.mkdtemp(prefix="bench-watch-", dir="/var/tmp"))
    bed = Bed.up(unique_prefix(), args.hosts)
    per_server = []
    try:
        give_device_ips(bed)
        for run in range(max(1, args.repeat)):
            stamp = int(time.time())
            short_cpu, short_s = one_job(bed, root, f"short{stamp}", args.short)
            long_cpu, long_s = one_job(bed, root, f"long{stamp}", args.long)
            value = (long_cpu - short_cpu) / ((long_s - short_s) * args.hosts)
            per_server.append(value)
            print(
                json.dumps(
                    {
                        "figure": "watch_round",
                        "round": run,
                        "short_cpu_s": round(short_cpu, 3),
                        "short_job_s": round(short_s, 2),
                        "long_cpu_s": round(long_cpu, 3),
                        "long_job_s": round(long_s, 2),
                        "cpu_per_server_s": round(value, 4),
                    }
                ),
                flush=True,
            )
    finally:
        bed.down()
    where = f"testbed {args.hosts} hosts x {DEVICES} ranks over ssh, jobs of {args.short:g} and {args.long:g} s"
    print(
        json.dumps(
            {"figure": "watch_cpu_per_server_s", "value": round(statistics.median(per_server), 4), "unit": "CPU-s/s", "where": where}
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
