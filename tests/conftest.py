"""Shared pytest set-up: the checkout is importable as ``ansible_collections.ascend.cluster``."""

from __future__ import annotations

import inspect
import json
import os
import resource
import sys
import time
from collections.abc import Generator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.helpers.collection import install_import_path

install_import_path()

# Module runs (ansible-playbook's, on the simulated cluster and the test bed) keep what they compile
# here instead of compiling ansible.module_utils again each time: tests/helpers/module_code_cache/.
# ASCEND_MODULE_CODE_CACHE= (empty) turns it off.
os.environ.setdefault("ASCEND_MODULE_CODE_CACHE", str(Path(__file__).resolve().parents[1] / "build" / "module-code-cache"))

# Test tiers are the directories under tests/; each test gets its tier's marker from where it lives,
# so `-m unit` and `pytest tests/unit` select the same tests and no file marks itself by hand.
TESTS_DIR = Path(__file__).resolve().parent
TIERS = {
    "unit": "unit",
    "simulator": "simulator",
    "integration": "integration",
    "testbed": "testbed",
}


# pytest-xdist hands tests out in collection order; the long ones (test bed, playbooks) go first so
# that no worker starts a 3-minute playbook test while the others are already done.
TIER_ORDER = ("testbed", "integration", "simulator", "unit")
# A test's rough cost for sharing the long tests out over the workers (worksteal_layout): a base by
# tier plus, for each ansible run its source starts (in the test or its module's fixtures and
# helpers), about what one costs. Only the ratios matter; a wrong guess only orders tests worse.
TIER_COST = {"testbed": 2.0, "integration": 2.0, "simulator": 1.0, "unit": 0.05}
RUN_COST = {
    "run_playbook(": 30.0,
    "start_playbook(": 30.0,
    "launch(": 30.0,
    "run(play": 30.0,
    "Bed.up(": 30.0,
    "run_adhoc(": 5.0,
    "run_module(": 1.0,
}


def _tier(item: pytest.Item) -> str:
    try:
        return item.path.resolve().relative_to(TESTS_DIR).parts[0]
    except ValueError:
        return ""


def _runs_cost(source: str) -> float:
    return sum(source.count(call) * each for call, each in RUN_COST.items())


def _module_cost(tests: list[pytest.Item]) -> float:
    """The estimated cost of one module's tests (TIER_COST, RUN_COST)."""
    functions = {f for f in (getattr(t, "function", None) for t in tests) if f is not None}
    sources = {f: inspect.getsource(f) for f in functions}
    own = sum(TIER_COST.get(_tier(t), 1.0) + _runs_cost(sources.get(getattr(t, "function", None), "")) for t in tests)
    # runs in fixtures and helpers, counted once per module
    rest = _runs_cost(tests[0].path.read_text()) - sum(_runs_cost(source) for source in sources.values())
    return own + max(0.0, rest)


def worksteal_layout(items: list[pytest.Item], workers: int) -> list[pytest.Item]:
    """The order in which ``--dist worksteal`` gives every worker its share of the long tests at once.

    worksteal first hands each worker one contiguous slice of the collection (equal counts), then
    lets an idle worker take the back half of the longest queue. In tier order the first slice held
    every test-bed and playbook test and the other workers only fast ones, so the long tests ran on
    one or two workers while the others waited for something to steal. Here each slice gets about a
    quarter of the long modules (whole modules: their module-scoped beds and clusters are made once),
    longest first, and is filled up to worksteal's count with unit tests, which are then what is
    left for stealing at the end.
    """
    modules: dict[Path, list[pytest.Item]] = {}
    for item in items:
        modules.setdefault(item.path, []).append(item)
    heavy = [tests for tests in modules.values() if _tier(tests[0]) != "unit"]
    filler = [item for tests in modules.values() if _tier(tests[0]) == "unit" for item in tests]
    cost = {id(tests): _module_cost(tests) for tests in heavy}
    slices: list[list[list[pytest.Item]]] = [[] for _worker in range(workers)]
    loads = [0.0] * workers
    for tests in sorted(heavy, key=lambda tests: -cost[id(tests)]):  # longest first, to the least loaded slice
        i = loads.index(min(loads))
        slices[i].append(tests)
        loads[i] += cost[id(tests)]
    ordered: list[pytest.Item] = []
    remaining = len(items)
    for i, chunk in enumerate(slices):
        size = remaining // (workers - i)  # worksteal's own split of what is still pending
        own = [item for tests in chunk for item in tests]
        take = max(0, size - len(own))
        ordered += own + filler[:take]
        filler = filler[take:]
        remaining -= size
    return ordered + filler


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        top = _tier(item)
        if top in TIERS:
            item.add_marker(TIERS[top])
    rank = {tier: i for i, tier in enumerate(TIER_ORDER)}
    items.sort(key=lambda item: rank.get(_tier(item), len(TIER_ORDER)))
    # Set in xdist's workers, which collect (and so order) the same. Their config says dist=no whatever
    # the run's --dist, so the layout applies to every mode; it is made for the Makefile's worksteal.
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "0"))
    if workers > 1:
        items[:] = worksteal_layout(items, workers)


# ASCEND_TEST_CPU_LOG=<file>: append one JSON line per test with the CPU seconds it cost (this
# process and every child it waited for: ansible-playbook, its workers and modules). CPU, unlike
# wall time, hardly moves with the machine's load, so it shows where the suite's time goes even
# on a busy machine (bench/suite_cpu.py sums it up).
CPU_LOG = os.environ.get("ASCEND_TEST_CPU_LOG")


def _cpu_s() -> float:
    total = 0.0
    for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN):
        usage = resource.getrusage(who)
        total += usage.ru_utime + usage.ru_stime
    return total


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None, object, object]:
    if not CPU_LOG:
        return (yield)
    cpu, wall, start = _cpu_s(), time.monotonic(), time.time()
    try:
        return (yield)
    finally:
        line = {
            "test": item.nodeid,
            "cpu_s": round(_cpu_s() - cpu, 2),
            "wall_s": round(time.monotonic() - wall, 2),
            "start": round(start, 2),
            "worker": os.environ.get("PYTEST_XDIST_WORKER", ""),
        }
        with open(CPU_LOG, "a") as handle:  # one short write per line: workers' lines do not interleave
            handle.write(json.dumps(line) + "\n")
