"""Benchmark playbooks/prepare.yml on the multi-host test bed: wall time of a no-change run.

For each size (2 and 4 hosts by default) a fresh bed is brought up (tests/testbed/bed.py), prepare
runs once to set everything (device IPs, firewall open_ports, netdetect peers, rank table), then
the no-change run is timed --runs times (it must report changed=0). Prints one JSON line per figure:

  prepare_2hosts_s   median wall time of a no-change prepare run on 2 hosts
  prepare_4hosts_s   the same on 4 hosts

plus prepare_<N>hosts_cpu_s (controller CPU seconds of that run: ansible-playbook and its
workers; less sensitive to the machine's load), prepare_<N>hosts_first_s (the run that
configures a fresh bed) and the machine's load
average at the end of each size (the figures are wall time on a shared 2-core machine).
With two sizes or more, prepare_cpu_per_host_s is the slope of the controller CPU between the
smallest and the largest (issue 10's target: <= 1.0 s per added host).
Runs as root (the bed needs namespaces). Details go to stderr.

Usage: .venv/bin/python bench/bench_prepare.py [--hosts 2 4] [--runs 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench._cpu import children_cpu  # noqa: E402
from tests.helpers.ansible_cli import run_playbook  # noqa: E402
from tests.testbed.harness import PREPARE_VARS, Bed, unique_prefix  # noqa: E402


def timed_run(bed: Bed) -> tuple[float, int, float]:
    """(wall seconds, changed count, controller CPU seconds: ansible-playbook and its workers)."""
    before = children_cpu()
    start = time.monotonic()
    result = run_playbook("playbooks/prepare.yml", bed.inventory, extra_vars=PREPARE_VARS)
    elapsed = time.monotonic() - start
    cpu = children_cpu() - before
    if result.rc != 0:
        raise SystemExit(f"prepare failed on {bed.prefix}:\n{result}")
    return elapsed, result.changed(), cpu


def bench(hosts: int, runs: int) -> float:
    """Print the size's figures; return its median controller CPU seconds."""
    bed = Bed.up(unique_prefix(), hosts)
    try:
        first, changed, _cpu = timed_run(bed)
        print(f"{hosts} hosts: first run {first:.1f}s, changed={changed}", file=sys.stderr)
        times, cpus = [], []
        for i in range(runs):
            elapsed, changed, cpu = timed_run(bed)
            cpus.append(cpu)
            if changed:
                raise SystemExit(f"no-change run {i} on {hosts} hosts reported changed={changed}")
            times.append(elapsed)
            print(f"{hosts} hosts: no-change run {i + 1}: {elapsed:.1f}s wall, {cpu:.1f}s controller CPU", file=sys.stderr)
    finally:
        bed.down()
    print(json.dumps({"figure": f"prepare_{hosts}hosts_s", "value": round(statistics.median(times), 2), "unit": "s"}))
    print(json.dumps({"figure": f"prepare_{hosts}hosts_cpu_s", "value": round(statistics.median(cpus), 2), "unit": "s"}))
    print(json.dumps({"figure": f"prepare_{hosts}hosts_first_s", "value": round(first, 2), "unit": "s"}))
    print(json.dumps({"figure": f"load_average_{hosts}hosts", "value": round(os.getloadavg()[0], 1), "unit": "1"}))
    sys.stdout.flush()
    return statistics.median(cpus)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, nargs="+", default=[2, 4])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("bench_prepare needs root (the test bed uses network namespaces)")
    cpu = {hosts: bench(hosts, args.runs) for hosts in args.hosts}
    if len(cpu) > 1:
        low, high = min(cpu), max(cpu)
        slope = (cpu[high] - cpu[low]) / (high - low)
        print(json.dumps({"figure": "prepare_cpu_per_host_s", "value": round(slope, 2), "unit": "s", "between": [low, high]}))


if __name__ == "__main__":
    main()
