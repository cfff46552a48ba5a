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


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        try:
            top = item.path.resolve().relative_to(TESTS_DIR).parts[0]
        except ValueError:
            continue
        if top in TIERS:
            item.add_marker(TIERS[top])
