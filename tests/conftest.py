"""Shared pytest set-up: the checkout is importable as ``ansible_collections.ascend.cluster``."""

from __future__ import annotations

import sys
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
