"""Every filter file is cheap to load: it imports its logic only when the filter is called.

A template that uses any one of the collection's filters makes Ansible load every filter file of the
collection, in the worker process that runs the task, compiled from source (the collection loader
writes no bytecode). With the logic (plugin_utils, module_utils) imported at the top of each file,
that cost every such task about 0.08 CPU-s per host; see docs/contracts.md (filter files).
"""

from __future__ import annotations

import ast
import subprocess
import sys

import pytest

from tests.helpers.collection import COLLECTIONS_DIR, REPO_ROOT

FILTER_DIR = REPO_ROOT / "plugins" / "filter"
COLLECTION = "ansible_collections.ascend.cluster.plugins."
# what a filter file may import when it is loaded: the error translation every filter uses (small, stdlib only)
LIGHT = {COLLECTION + "plugin_utils._errors"}


def top_level_imports(source: str) -> list[str]:
    """The collection modules a file imports when it is loaded (module level, not inside a function)."""
    found = []
    for node in ast.parse(source).body:
        if isinstance(node, ast.ImportFrom) and node.module:
            found.append(node.module)
        elif isinstance(node, ast.Import):
            found.extend(alias.name for alias in node.names)
    return [name for name in found if name.startswith(COLLECTION)]


@pytest.mark.parametrize("path", sorted(FILTER_DIR.glob("*.py")), ids=lambda p: p.name)
def test_a_filter_file_imports_its_logic_only_when_called(path):
    heavy = sorted(set(top_level_imports(path.read_text())) - LIGHT)
    assert not heavy, f"{path.name} imports {', '.join(heavy)} when loaded; import it inside the filter function"


def test_the_rule_sees_a_top_level_import():
    source = "from __future__ import annotations\nfrom ansible_collections.ascend.cluster.plugins.plugin_utils._rank.select import x\n"
    assert top_level_imports(source) == [COLLECTION + "plugin_utils._rank.select"]
    inside = "def f():\n    from ansible_collections.ascend.cluster.plugins.plugin_utils._rank.select import x\n    return x\n"
    assert top_level_imports(inside) == []


def test_loading_every_filter_file_loads_no_logic():
    """All filter files loaded in a fresh interpreter, as a worker does: no plugin_utils module but _errors."""
    code = (
        "import importlib, pathlib, sys\n"
        f"sys.path.insert(0, {str(COLLECTIONS_DIR)!r})\n"
        f"for p in sorted(pathlib.Path({str(FILTER_DIR)!r}).glob('*.py')):\n"
        f"    importlib.import_module({COLLECTION + 'filter.'!r} + p.stem)\n"
        f"print(sorted(m for m in sys.modules if m.startswith({COLLECTION!r}) and '.filter' not in m))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert ast.literal_eval(out.strip()) == sorted(LIGHT | {COLLECTION + "plugin_utils"})
