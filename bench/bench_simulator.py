"""What one simulated hccn_tool call costs, and 80 concurrent queries with 100 ms latency.

hccn_facts calls hccn_tool ~80 times at once on a 16-device host; on a 2-core machine the
simulator's own start-up is what the module's benchmark mostly measures, so it is tracked here.
Prints one JSON object per figure:
  sim_python_floor_cpu_s        CPU of a bare `python3 -S -c pass` (the floor no simulator beats)
  sim_get_call_cpu_s            CPU of one installed `hccn_tool -i 3 -ip -g`
  sim_80_queries_100ms_s        wall time of 16 devices x 5 queries at once, 100 ms latency each
Run: .venv/bin/python bench/bench_simulator.py
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench._cpu import children_cpu  # noqa: E402
from tests.simulator.simhelpers import ASCEND_SIM, SYSTEM_PYTHON, a3_server, facts_queries_at_once  # noqa: E402


def cpu_per_call(argv: list[str], n: int = 50) -> float:
    before = children_cpu()
    for _call in range(n):
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return (children_cpu() - before) / n


def emit(figure: str, value: float) -> None:
    print(json.dumps({"figure": figure, "value": round(value, 4), "unit": "s"}), flush=True)


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="bench-sim-") as tmp:
        server = a3_server(Path(tmp))
        tool = os.path.join(server["bin_dir"], "hccn_tool")
        emit("sim_python_floor_cpu_s", min(cpu_per_call([SYSTEM_PYTHON, "-S", "-c", "pass"]) for _repeat in range(3)))
        emit("sim_get_call_cpu_s", min(cpu_per_call([tool, "-i", "3", "-ip", "-g"]) for _repeat in range(3)))
        subprocess.run([str(ASCEND_SIM), "-q", "fault", "--state", server["state_dir"], "latency", "--seconds", "0.1"], check=True)
        best = float("inf")
        for _round in range(3):
            start = time.monotonic()
            codes = [proc.returncode for _task, proc in facts_queries_at_once(server)]
            best = min(best, time.monotonic() - start)
            if any(codes):
                raise SystemExit(f"some simulated calls failed: {codes}")
        emit("sim_80_queries_100ms_s", best)


if __name__ == "__main__":
    main()
