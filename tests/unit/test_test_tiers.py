"""Tests sit in the tier their imports say (tests/conftest.py marks each test by its directory).

- A file of tests/integration runs something: a playbook, ad-hoc command or module through
  tests/helpers/ansible_cli.py, a simulated cluster (the ``sim_cluster`` / ``unreachable_inventory``
  fixtures), or a command (subprocess). Pure-Python tests belong in tests/unit.
- No file outside tests/unit imports from it: fixtures and data two tiers share live in
  tests/helpers (or a conftest.py).
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.helpers.collection import REPO_ROOT

TESTS = REPO_ROOT / "tests"
# What running something looks like in an integration test: the runners of tests/helpers/ansible_cli.py, the
# integration conftest's fixtures, a subprocess.
RUNNERS = {"run_playbook", "start_playbook", "run_adhoc", "run_module", "sim_cluster", "unreachable_inventory", "subprocess"}


def _names(tree: ast.AST) -> set:
    """Every name a file uses, imports or takes as an argument (a fixture)."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            found.add(node.id)
        elif isinstance(node, ast.arg):
            found.add(node.arg)
        elif isinstance(node, ast.alias):
            found.add((node.asname or node.name).split(".")[0])
    return found


def _imported_modules(tree: ast.AST) -> set:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


def integration_files_running_nothing(root: Path = TESTS) -> list:
    return sorted(
        str(path.relative_to(root))
        for path in (root / "integration").glob("test_*.py")
        if not _names(ast.parse(path.read_text(encoding="utf-8"))) & RUNNERS
    )


def imports_across_tiers(root: Path = TESTS) -> list:
    found = []
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root)
        if relative.parts[0] == "unit":
            continue
        for module in sorted(_imported_modules(ast.parse(path.read_text(encoding="utf-8")))):
            if module == "tests.unit" or module.startswith("tests.unit."):
                found.append(f"{relative} imports {module}")
    return found


def test_every_integration_file_runs_something():
    assert integration_files_running_nothing() == []


def test_no_other_tier_imports_from_the_unit_tests():
    assert imports_across_tiers() == []


def test_the_checks_find_what_they_look_for(tmp_path):
    (tmp_path / "integration").mkdir()
    (tmp_path / "integration" / "test_pure.py").write_text("from x import report\n\ndef test_it():\n    assert report()\n")
    (tmp_path / "integration" / "test_play.py").write_text("def test_it(sim_cluster):\n    assert sim_cluster\n")
    (tmp_path / "integration" / "test_shared.py").write_text("from tests.unit.plugins.filter.clusters import seed_table\n")
    assert integration_files_running_nothing(tmp_path) == ["integration/test_pure.py", "integration/test_shared.py"]
    assert imports_across_tiers(tmp_path) == ["integration/test_shared.py imports tests.unit.plugins.filter.clusters"]
