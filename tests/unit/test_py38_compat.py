"""module_utils and modules still run on Python 3.8, the oldest target Python of ansible-core 2.19.

They are written with ``from __future__ import annotations``, so annotations may use ``list[int]``
and ``X | None``; anything evaluated at run time may not. Two checks:

- under a real Python of the running ansible-core's oldest target (3.8 on 2.19, 3.9 on 2.20+;
  skipped, saying why, when none is installed): every file compiles, and every module imports (as
  ``ansible_collections.ascend.cluster...``, with this venv's ansible-core);
- here: no ``list[...]`` / ``dict[...]`` / ... and no ``X | Y`` in isinstance() outside
  annotations, and none of the 3.9+ standard library names below, even inside functions (which
  importing does not run).
"""

from __future__ import annotations

import ast
import glob
import json
import os
import shutil
import subprocess
import textwrap
from pathlib import Path

import ansible
import pytest
from ansible.module_utils.basic import _PY_MIN

REPO = Path(__file__).resolve().parents[2]
TARGET_DIRS = ("plugins/module_utils", "plugins/modules")
PACKAGE = "ansible_collections.ascend.cluster"


def _target_files() -> list[Path]:
    return sorted(p for d in TARGET_DIRS for p in (REPO / d).glob("*.py"))


# The oldest target Python of the running ansible-core: 3.8 on 2.19, 3.9 on 2.20 and 2.21 (its
# module_utils refuse anything older, so the import half checks against that one).
OLDEST: tuple[int, int] = tuple(_PY_MIN)[:2]  # type: ignore[assignment]


def _find_py38() -> str | None:
    major, minor = OLDEST
    candidates = [os.environ.get("ASCEND_PY%d%d" % OLDEST, "")]
    candidates += sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/%d.%d.*/bin/python" % OLDEST)))
    candidates += sorted(glob.glob("/root/.pyenv/versions/%d.%d.*/bin/python" % OLDEST))
    candidates.append(shutil.which("python%d.%d" % OLDEST) or "")  # may be a pyenv shim that does not run
    for candidate in candidates:
        if candidate and os.access(candidate, os.X_OK):
            probe = subprocess.run(
                [candidate, "-c", "import sys; print(sys.version_info[:2] == (%d, %d))" % (major, minor)],
                capture_output=True,
                text=True,
                check=False,
            )
            if probe.stdout.strip() == "True":
                return candidate
    return None


# Runs under Python 3.8: argv[1] is a JSON list of [path, module name]; prints a JSON list of problems.
_CHILD = textwrap.dedent(
    """
    import importlib, json, sys, traceback
    problems = []
    for path, name in json.loads(sys.argv[1]):
        try:
            with open(path, encoding="utf-8") as handle:
                compile(handle.read(), path, "exec", dont_inherit=True)
            importlib.import_module(name)
        except BaseException:
            problems.append("%s: %s" % (path, traceback.format_exc(limit=3)))
    print(json.dumps({"version": list(sys.version_info[:2]), "problems": problems}))
    """
)


def test_target_code_compiles_and_imports_on_python38(tmp_path):
    py38 = _find_py38()
    if py38 is None:
        pytest.skip("no Python %d.%d found (set ASCEND_PY%d%d, or install it with pyenv): the import check did not run" % (OLDEST * 2))
    # The controller's ansible package (its module_utils support 3.8 targets) and this checkout as
    # the collection, on a path of their own; -I keeps the user's site and PYTHONPATH out.
    (tmp_path / "ansible").symlink_to(Path(ansible.__file__).parent, target_is_directory=True)
    (tmp_path / "ansible_collections" / "ascend").mkdir(parents=True)
    (tmp_path / "ansible_collections" / "ascend" / "cluster").symlink_to(REPO, target_is_directory=True)
    files = _target_files()
    assert len(files) > 10, files
    pairs = [[str(p), "%s.%s.%s" % (PACKAGE, p.parent.relative_to(REPO).as_posix().replace("/", "."), p.stem)] for p in files]
    script = "import sys; sys.path.insert(0, %r)\n%s" % (str(tmp_path), _CHILD)
    proc = subprocess.run([py38, "-I", "-B", "-c", script, json.dumps(pairs)], capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["version"] == list(OLDEST)
    assert report["problems"] == []


# Standard library names that Python 3.8 does not have: methods (any owner), module functions
# (``module.name`` or ``from module import name``) and whole modules.
_NEWER_METHODS = {"removeprefix": "3.9", "removesuffix": "3.9", "is_relative_to": "3.9", "bit_count": "3.10"}
_NEWER_FUNCTIONS = {
    ("functools", "cache"): "3.9 (use lru_cache(maxsize=None))",
    ("math", "lcm"): "3.9",
    ("random", "randbytes"): "3.9",
    ("itertools", "pairwise"): "3.10",
    ("itertools", "batched"): "3.12",
    ("asyncio", "TaskGroup"): "3.11",
}
_NEWER_MODULES = {"zoneinfo": "3.9", "graphlib": "3.9", "tomllib": "3.11"}
_GENERIC_BUILTINS = {"list", "dict", "tuple", "set", "frozenset", "type"}


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _never_run_nodes(tree: ast.AST) -> set[int]:
    """ids of every node inside an annotation (never evaluated under the __future__ import) or
    inside ``if TYPE_CHECKING:`` (never run)."""
    roots: list[ast.AST] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            roots += node.body
        elif isinstance(node, ast.arg) and node.annotation is not None:
            roots.append(node.annotation)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.returns is not None:
            roots.append(node.returns)
        elif isinstance(node, ast.AnnAssign):
            roots.append(node.annotation)
    return {id(sub) for root in roots for sub in ast.walk(root)}


def runtime_problems(source: str) -> list[str]:
    """What in ``source`` would fail on Python 3.8 when it runs (not just when it is imported)."""
    tree = ast.parse(source)
    skip = _never_run_nodes(tree)
    found = []
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id in _GENERIC_BUILTINS:
            found.append(f"line {line}: {node.value.id}[...] outside an annotation needs Python 3.9")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("isinstance", "issubclass"):
            if len(node.args) == 2 and isinstance(node.args[1], ast.BinOp) and isinstance(node.args[1].op, ast.BitOr):
                found.append(f"line {line}: {node.func.id}(x, A | B) needs Python 3.10; use a tuple")
        elif isinstance(node, ast.Attribute):
            owner = node.value.id if isinstance(node.value, ast.Name) else ""
            if node.attr in _NEWER_METHODS:
                found.append(f"line {line}: .{node.attr} needs Python {_NEWER_METHODS[node.attr]}")
            elif (owner, node.attr) in _NEWER_FUNCTIONS:
                found.append(f"line {line}: {owner}.{node.attr} needs Python {_NEWER_FUNCTIONS[owner, node.attr]}")
        elif isinstance(node, ast.Import):
            found += [f"line {line}: module {a.name} needs Python {_NEWER_MODULES[a.name]}" for a in node.names if a.name in _NEWER_MODULES]
        elif isinstance(node, ast.ImportFrom) and node.module:
            if node.module in _NEWER_MODULES:
                found.append(f"line {line}: module {node.module} needs Python {_NEWER_MODULES[node.module]}")
            found += [
                f"line {line}: {node.module}.{a.name} needs Python {_NEWER_FUNCTIONS[node.module, a.name]}"
                for a in node.names
                if (node.module, a.name) in _NEWER_FUNCTIONS
            ]
        elif type(node).__name__ == "Match":
            found.append(f"line {line}: match needs Python 3.10")
    return found


@pytest.mark.parametrize("path", _target_files(), ids=lambda p: p.relative_to(REPO).as_posix())
def test_no_newer_python_at_run_time(path):
    assert runtime_problems(path.read_text(encoding="utf-8")) == []


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("x: list[int] = []\ndef f(a: dict[str, int] | None) -> tuple[int, ...]: ...", []),
        ("Alias = list[int]", ["line 1: list[...] outside an annotation needs Python 3.9"]),
        (
            "if TYPE_CHECKING:\n    Alias = list[int]\nelse:\n    Other = dict[str, int]",
            ["line 4: dict[...] outside an annotation needs Python 3.9"],
        ),
        ("isinstance(v, int | str)", ["line 1: isinstance(x, A | B) needs Python 3.10; use a tuple"]),
        ("'ab'.removeprefix('a')", ["line 1: .removeprefix needs Python 3.9"]),
        ("import functools\n@functools.cache\ndef f(): pass", ["line 2: functools.cache needs Python 3.9 (use lru_cache(maxsize=None))"]),
        ("from functools import cache", ["line 1: functools.cache needs Python 3.9 (use lru_cache(maxsize=None))"]),
        ("self.cache = {}", []),
        ("from zoneinfo import ZoneInfo", ["line 1: module zoneinfo needs Python 3.9"]),
        ("match v:\n    case 1: pass", ["line 1: match needs Python 3.10"]),
    ],
)
def test_the_run_time_scan_sees_what_it_should(source, expected):
    assert runtime_problems(source) == expected
