"""Smoke benchmark: ``smoke.yml`` on the simulated local 2 x 8 cluster, the check users run in their CI.

- ``smoke_2x8_s``: one healthy smoke run's wall time (facts, health, rank table, the rank check on 16 ranks, summary);
- ``smoke_2x8_cpu_s``: CPU seconds of ``ansible-playbook`` and every process it waited for (on the simulated
  cluster that includes the modules, which run locally; the detached ranks are not counted).

Each run gets a fresh simulated cluster (tests/simulator's ``ascend-sim cluster``). With ``--repeat N`` every run
is printed and the figure is the median.

    .venv/bin/python bench/bench_smoke.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench._cpu import children_cpu  # noqa: E402
from bench.bench_launch import sim_target  # noqa: E402
from tests.helpers.ansible_cli import run_playbook  # noqa: E402

SMOKE = REPO / "playbooks" / "smoke.yml"


def one_run(root: Path) -> tuple[float, float]:
    """Wall and CPU seconds of one healthy smoke run on a fresh simulated cluster under ``root``."""
    inventory, extra, _runs = sim_target(root)
    began, cpu = time.monotonic(), children_cpu()
    result = run_playbook(SMOKE, inventory, extra_vars=dict(extra, np=16), timeout=600)
    wall, cpu = time.monotonic() - began, children_cpu() - cpu
    if result.rc != 0:
        raise SystemExit(f"smoke failed:\n{result}")
    return wall, cpu


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs, each on a fresh cluster (default 3)")
    args = parser.parse_args()
    walls, cpus = [], []
    with tempfile.TemporaryDirectory(prefix="bench-smoke-") as tmp:
        for run in range(max(1, args.repeat)):
            wall, cpu = one_run(Path(tmp) / f"cluster{run}")
            walls.append(wall)
            cpus.append(cpu)
            print(json.dumps({"run": run, "wall_s": round(wall, 3), "cpu_s": round(cpu, 3)}), file=sys.stderr, flush=True)
    where = "simulated local cluster 2 x 8, np=16"
    for figure, values in (("smoke_2x8_s", walls), ("smoke_2x8_cpu_s", cpus)):
        print(
            json.dumps({"figure": figure, "value": round(statistics.median(values), 3), "unit": "s", "where": where, "runs": len(values)})
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
