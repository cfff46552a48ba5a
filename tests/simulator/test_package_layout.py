"""The simulator package's own shape: no import cycle between its modules, one fault handler per fault kind."""

from __future__ import annotations

import ast
import importlib
import sys

import pytest

from tests.simulator.simhelpers import REPO

PACKAGE = REPO / "simulator" / "ascend_sim"


def _imports(name: str) -> set:
    """The package modules ``name`` imports, at the top or inside a function (``from . import x``, ``from .x import y``)."""
    tree = ast.parse((PACKAGE / f"{name}.py").read_text(encoding="utf-8"))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            if node.module:
                found.add(node.module.split(".")[0])
            else:
                found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("ascend_sim."):
            found.add(node.module.split(".")[1])
    return found


def _cycle(graph: dict) -> list:
    """One import cycle of ``graph`` as a list of modules, or []."""
    done: set = set()

    def visit(node, path):
        if node in path:
            return path[path.index(node) :] + [node]
        if node in done:
            return []
        for nxt in sorted(graph.get(node, ())):
            found = visit(nxt, path + [node])
            if found:
                return found
        done.add(node)
        return []

    for start in sorted(graph):
        found = visit(start, [])
        if found:
            return found
    return []


def test_no_module_of_the_package_imports_itself_back():
    graph = {path.stem: _imports(path.stem) for path in PACKAGE.glob("*.py")}
    assert _cycle(graph) == []
    # the one that was there: store renders the answers, the answers run hccn, and hccn saved through store
    assert "store" not in graph["hccn"] and "answers" not in graph["hccn"]


def test_the_cycle_finder_finds_one():
    assert _cycle({"store": {"answers"}, "answers": {"hccn"}, "hccn": {"store"}}) == ["answers", "hccn", "store", "answers"]


@pytest.fixture
def admin(monkeypatch):
    monkeypatch.syspath_prepend(str(PACKAGE.parent))
    yield importlib.import_module("ascend_sim.admin")
    for name in [n for n in sys.modules if n == "ascend_sim" or n.startswith("ascend_sim.")]:
        del sys.modules[name]


def test_the_simulator_forces_every_net_health_value_the_collection_reads(admin):
    """The simulator keeps its own copy (it imports nothing of the collection); the two lists are one."""
    from ansible_collections.ascend.cluster.plugins.module_utils._hccn.parse import NET_HEALTH_VALUES

    assert admin.HEALTH_CHOICES == NET_HEALTH_VALUES


def test_every_fault_kind_has_its_handler(admin):
    parser = admin.build_parser()
    fault = next(a for a in parser._subparsers._group_actions[0].choices["fault"]._actions if a.dest == "kind")
    assert set(fault.choices) == set(admin.FAULTS)
