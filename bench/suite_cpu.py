"""Where the test suite's CPU goes: sum a pytest run's ASCEND_TEST_CPU_LOG by tier, file and test.

    ASCEND_TEST_CPU_LOG=build/suite-cpu.jsonl .venv/bin/python -m pytest -n 4 tests/integration
    .venv/bin/python bench/suite_cpu.py build/suite-cpu.jsonl [--top 25]

CPU seconds (the test process plus every child it waited for) hardly move with the machine's load,
unlike wall time; on this 2-core machine the suite's wall time is bounded below by its CPU / 2. Not
counted: processes that no test waits for (the test bed hosts' sshd sessions, with their modules and
ranks; the detached supervisors and ranks of the simulated cluster's jobs): about a fifth of what a
whole `make test` uses, which /proc/stat before and after shows.
"""

from __future__ import annotations

import argparse
import json
import signal
from collections import defaultdict


def load(path: str) -> list[dict]:
    with open(path) as handle:
        return [json.loads(line) for line in handle if line.strip()]


def by_key(rows: list[dict], key) -> list[tuple[str, float, float, int]]:
    sums: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0])
    for row in rows:
        entry = sums[key(row["test"])]
        entry[0] += row["cpu_s"]
        entry[1] += row["wall_s"]
        entry[2] += 1
    return sorted(((k, v[0], v[1], int(v[2])) for k, v in sums.items()), key=lambda t: -t[1])


def table(title: str, rows: list[tuple[str, float, float, int]]) -> None:
    print(f"\n{title}\n{'cpu_s':>8} {'wall_s':>8} {'tests':>6}  name")
    for name, cpu, wall, count in rows:
        print(f"{cpu:8.1f} {wall:8.1f} {count:6d}  {name}")


def main() -> None:
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # | head is fine
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("log")
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args()
    rows = load(args.log)
    total_cpu = sum(r["cpu_s"] for r in rows)
    print(f"{len(rows)} tests, {total_cpu:.0f} CPU-s in all (>= {total_cpu / 2 / 60:.1f} min of wall on 2 cores)")
    table("by tier", by_key(rows, lambda t: t.split("/")[1] if t.startswith("tests/") else t.split("::")[0]))
    table(f"by file (top {args.top})", by_key(rows, lambda t: t.split("::")[0])[: args.top])
    table(f"by test (top {args.top})", by_key(rows, lambda t: t)[: args.top])


if __name__ == "__main__":
    main()
