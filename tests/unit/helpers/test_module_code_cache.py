"""The tests' compile cache for module runs (tests/helpers/module_code_cache): used, keyed by source, invisible."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.helpers.ansible_cli import MODULE_CODE_CACHE, ansible_env, module_code_cache_env

# What a module run does with its AnsiballZ zip: put it first on sys.path and import from it.
PROGRAM = """
import sys, traceback
sys.path.insert(0, sys.argv[1])
import payload
print(payload.VALUE)
try:
    payload.fail()
except ValueError:
    print(traceback.extract_tb(sys.exc_info()[2])[-1].filename)
"""
SOURCE = "VALUE = 'compiled'\n\n\ndef fail():\n    raise ValueError('x')\n"


def _zip(path: Path, source: str) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("payload.py", source)
    return path


def _run(zip_path: Path, cache: Path | str, python: str = sys.executable) -> list[str]:
    env = {"ASCEND_MODULE_CODE_CACHE": str(cache), **module_code_cache_env({"ASCEND_MODULE_CODE_CACHE": str(cache)})}
    proc = subprocess.run([python, "-c", PROGRAM, str(zip_path)], env=env, capture_output=True, text=True, check=True, timeout=60)
    return proc.stdout.split()


def _entries(cache: Path) -> list[Path]:
    return sorted(p for p in cache.rglob("*") if p.is_file())


# The controller's interpreter (the simulated cluster's modules) and the system one (the test bed's hosts).
@pytest.mark.parametrize("python", [sys.executable, "/usr/bin/python3"])
def test_the_first_run_writes_the_code_and_the_next_reads_it_under_its_own_zip_name(tmp_path: Path, python: str) -> None:
    cache = tmp_path / "cache"
    assert _run(_zip(tmp_path / "a.zip", SOURCE), cache, python) == ["compiled", f"{tmp_path}/a.zip/payload.py"]
    (entry,) = _entries(cache)
    # The next run takes its code from the cache: replaced there, it is what runs.
    replaced = (
        f"import marshal, sys; sys.stdout.buffer.write(marshal.dumps(compile({SOURCE.replace('compiled', 'cached')!r}, 'x', 'exec')))"
    )
    entry.write_bytes(subprocess.run([python, "-c", replaced], capture_output=True, check=True).stdout)
    assert _run(_zip(tmp_path / "b.zip", SOURCE), cache, python) == ["cached", f"{tmp_path}/b.zip/payload.py"]


def test_a_changed_source_is_compiled_not_taken_from_the_cache(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    _run(_zip(tmp_path / "a.zip", SOURCE), cache)
    changed = SOURCE.replace("'compiled'", "'changed'")
    assert _run(_zip(tmp_path / "b.zip", changed), cache)[0] == "changed"
    assert len(_entries(cache)) == 2


def test_an_unusable_cache_falls_back_to_compiling(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory\n")
    assert _run(_zip(tmp_path / "a.zip", SOURCE), blocker / "cache")[0] == "compiled"
    cache = tmp_path / "cache"
    _run(_zip(tmp_path / "a.zip", SOURCE), cache)
    for entry in _entries(cache):
        entry.write_bytes(b"\x00garbage")
    assert _run(_zip(tmp_path / "a.zip", SOURCE), cache)[0] == "compiled"


@pytest.mark.parametrize("name", ["", "unset"])
def test_without_a_cache_named_nothing_is_written_or_changed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    if name == "unset":
        monkeypatch.delenv("ASCEND_MODULE_CODE_CACHE", raising=False)
    else:
        monkeypatch.setenv("ASCEND_MODULE_CODE_CACHE", name)
    monkeypatch.delenv("PYTHONPATH", raising=False)
    assert "PYTHONPATH" not in ansible_env()
    env = {"PYTHONPATH": str(MODULE_CODE_CACHE), "ASCEND_MODULE_CODE_CACHE": ""}
    proc = subprocess.run(
        [sys.executable, "-c", PROGRAM, str(_zip(tmp_path / "a.zip", SOURCE))], env=env, capture_output=True, text=True, check=True
    )
    assert proc.stdout.split()[0] == "compiled"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.zip"]


def test_pytest_runs_give_ansible_the_cache_first_on_pythonpath(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONPATH", "/elsewhere")
    monkeypatch.setenv("ASCEND_MODULE_CODE_CACHE", "/c/cache")
    env = ansible_env()
    assert env["PYTHONPATH"].split(":") == [str(MODULE_CODE_CACHE), "/elsewhere"]
    assert env["ASCEND_MODULE_CODE_CACHE"] == "/c/cache"
