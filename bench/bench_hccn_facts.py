"""Benchmark hccn_facts: a simulated A3 server (16 devices), every hccn_tool call taking 100 ms.

Prints one JSON object per line:
  hccn_facts_16dev_100ms_s             the module with its default concurrency (target: <= 1.0 s)
  hccn_facts_16dev_100ms_cpu_s         CPU seconds of one such run, module and every process it started
                                       (on this 2-core machine wall time cannot go below about half of it)
  hccn_facts_16dev_100ms_sequential_s  the same with parallel=1, for the ratio (~8 s expected)
  hccn_facts_16dev_0ms_s               the same host with hccn_tool latency 0 (process and CPU cost only)
Each value is the median of --runs runs of the module, run as a subprocess exactly like
tests.helpers.ansible_cli.run_module does. Details (every run) go to stderr.

Usage: .venv/bin/python bench/bench_hccn_facts.py [--runs N] [--devices N] [--latency S]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench._cpu import children_cpu  # noqa: E402  (needs the repo on sys.path)
from tests.helpers.ansible_cli import run_module  # noqa: E402  (needs the repo on sys.path)

SIM = REPO / "simulator" / "bin" / "ascend-sim"


def build_server(root: Path, devices: int, latency: float) -> dict:
    out = subprocess.run(
        [
            sys.executable,
            str(SIM),
            "cluster",
            "--root",
            str(root),
            "--servers",
            "1",
            "--chip",
            "A3",
            "--devices",
            str(devices),
            "--preset-ips",
            "--latency",
            str(latency),
            "--python",
            sys.executable,
        ],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return json.loads(out)["servers"][0]


def set_latency(server: dict, seconds: float) -> None:
    subprocess.run(
        [sys.executable, str(SIM), "fault", "--state", server["state_dir"], "latency", "--seconds", str(seconds)],
        check=True,
        capture_output=True,
        text=True,
    )


def time_module(server: dict, runs: int, devices: int, cpu: list | None = None, **args) -> list[float]:
    """Wall seconds of each run; CPU seconds (module + every hccn_tool/npu-smi it ran) go to ``cpu``."""
    env = {"PATH": server["bin_dir"] + os.pathsep + os.environ.get("PATH", ""), "ASCEND_SIM_STATE": server["state_dir"]}
    times = []
    for dummy in range(runs):
        start, start_cpu = time.monotonic(), children_cpu()
        result = run_module("hccn_facts", dict(args, hccn_conf=server["hccn_conf"]), env=env)
        times.append(time.monotonic() - start)
        if cpu is not None:
            cpu.append(children_cpu() - start_cpu)
        facts = result.get("ansible_facts", {}).get("ascend_npu", {})
        bad = [d["device_id"] for d in facts.get("devices", []) if d.get("error") or not d.get("device_ip")]
        if result.get("failed") or facts.get("device_count") != devices or bad:
            raise SystemExit("hccn_facts did not return %d healthy devices: %s" % (devices, json.dumps(result)[:2000]))
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--devices", type=int, default=16)
    parser.add_argument("--latency", type=float, default=0.1)
    opts = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-hccn-facts-") as tmp:
        server = build_server(Path(tmp), opts.devices, opts.latency)
        cpu: list[float] = []
        figures = [
            ("hccn_facts_16dev_100ms_s", time_module(server, opts.runs, opts.devices, cpu)),
            ("hccn_facts_16dev_100ms_cpu_s", cpu),
            ("hccn_facts_16dev_100ms_sequential_s", time_module(server, 1, opts.devices, parallel=1)),
        ]
        set_latency(server, 0.0)
        figures.append(("hccn_facts_16dev_0ms_s", time_module(server, opts.runs, opts.devices)))
    for name, times in figures:
        sys.stderr.write("%s: runs %s (load %s)\n" % (name, ", ".join("%.3f" % t for t in times), os.getloadavg()))
        print(json.dumps({"figure": name, "value": round(statistics.median(times), 3), "unit": "s"}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
