"""Shared pytest set-up: the checkout is importable as ``ansible_collections.ascend.cluster``."""

from __future__ import annotations

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


def _tier(item: pytest.Item) -> str:
    try:
        return item.path.resolve().relative_to(TESTS_DIR).parts[0]
    except ValueError:
        return ""


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        top = _tier(item)
        if top in TIERS:
            item.add_marker(TIERS[top])
    rank = {tier: i for i, tier in enumerate(TIER_ORDER)}
    items.sort(key=lambda item: rank.get(_tier(item), len(TIER_ORDER)))


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
    cpu, wall = _cpu_s(), time.monotonic()
    try:
        return (yield)
    finally:
        line = {"test": item.nodeid, "cpu_s": round(_cpu_s() - cpu, 2), "wall_s": round(time.monotonic() - wall, 2)}
        with open(CPU_LOG, "a") as handle:  # one short write per line: workers' lines do not interleave
            handle.write(json.dumps(line) + "\n")
