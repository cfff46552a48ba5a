"""Run the ``ansible`` / ``ansible-playbook`` CLIs and modules from tests.

Why not pytest-ansible: it has deprecated itself (planned end of life December 2026) and its
maintainers recommend plain pytest plus a small helper around the CLIs. This is that helper:
tests exercise exactly what a user runs, with output a person can read when a test fails.

Deprecation warnings are on for every run and any ``[DEPRECATION WARNING]`` in a run's output
fails the test (``DeprecationFound``): a deprecation our code causes today is an error in a later
ansible-core (lazy-container deepcopy in 2.25, injected fact variables off by default in 2.24).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from .collection import COLLECTIONS_DIR, REPO_ROOT, ensure_collection_link

BIN_DIR = Path(sys.executable).parent
_RECAP_LINE = re.compile(
    r"^(?P<host>\S+)\s+:\s+ok=(?P<ok>\d+)\s+changed=(?P<changed>\d+)\s+unreachable=(?P<unreachable>\d+)"
    r"\s+failed=(?P<failed>\d+)\s+skipped=(?P<skipped>\d+)\s+rescued=(?P<rescued>\d+)\s+ignored=(?P<ignored>\d+)"
)


def ansible_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """Environment for a CLI run: this checkout as the collection, no colour, no cows."""
    ensure_collection_link()
    env = dict(os.environ)
    env.update(
        {
            "ANSIBLE_COLLECTIONS_PATH": str(COLLECTIONS_DIR),
            "ANSIBLE_NOCOLOR": "1",
            "ANSIBLE_FORCE_COLOR": "0",
            "ANSIBLE_NOCOWS": "1",
            "ANSIBLE_HOST_KEY_CHECKING": "False",
            "ANSIBLE_RETRY_FILES_ENABLED": "False",
            "ANSIBLE_DEPRECATION_WARNINGS": "True",
            "ANSIBLE_LOCALHOST_WARNING": "False",
            "ANSIBLE_INVENTORY_UNPARSED_WARNING": "False",
            "PATH": f"{BIN_DIR}{os.pathsep}{env.get('PATH', '')}",
        }
    )
    env.pop("ANSIBLE_CONFIG", None)
    env.update(module_code_cache_env(env))
    if extra:
        env.update(extra)
    return env


MODULE_CODE_CACHE = Path(__file__).resolve().parent / "module_code_cache"


def module_code_cache_env(env: Mapping[str, str]) -> dict[str, str]:
    """``PYTHONPATH`` that gives module runs the compile cache, when ``ASCEND_MODULE_CODE_CACHE`` names its directory.

    tests/conftest.py names one for pytest runs (the benchmarks run without it, as users' modules do);
    module_code_cache/sitecustomize.py says what it does and why.
    """
    if not env.get("ASCEND_MODULE_CODE_CACHE"):
        return {}
    path = [str(MODULE_CODE_CACHE), *filter(None, env.get("PYTHONPATH", "").split(os.pathsep))]
    return {"PYTHONPATH": os.pathsep.join(dict.fromkeys(path))}


DEPRECATION_MARK = "[DEPRECATION WARNING]"


class DeprecationFound(AssertionError):
    """An ansible run printed a deprecation warning (or a module returned one)."""


def fail_on_deprecation(output: str, what: str) -> None:
    """Raise ``DeprecationFound`` quoting each deprecation warning in ``output``."""
    lines = output.splitlines()
    found = [i for i, line in enumerate(lines) if DEPRECATION_MARK in line]
    if found:
        # a warning may run over a few lines (wrapped text, the origin, a traceback when asked for)
        shown = "\n".join("\n".join(lines[i : i + 6]) for i in found[:5])
        raise DeprecationFound(
            f"{what} printed {len(found)} deprecation warning(s); fix their cause in the collection "
            f"(ANSIBLE_DISPLAY_TRACEBACK=deprecated shows where):\n{shown}"
        )


@dataclass(repr=False)
class PlaybookResult:
    """What one ``ansible-playbook`` run did."""

    rc: int
    stdout: str
    stderr: str
    recap: dict[str, dict[str, int]] = field(default_factory=dict)

    @property
    def output(self) -> str:
        return self.stdout + self.stderr

    def changed(self, host: str | None = None) -> int:
        hosts = [host] if host else list(self.recap)
        return sum(self.recap[h]["changed"] for h in hosts)

    def failed_hosts(self) -> list[str]:
        return [h for h, c in self.recap.items() if c["failed"] or c["unreachable"]]

    def __str__(self) -> str:
        return f"rc={self.rc}\n--- stdout ---\n{self.stdout}\n--- stderr ---\n{self.stderr}"

    # ``assert res.rc == 0, res`` shows repr(res); with pytest.ini's verbosity_assertions = 2 it is
    # not cut at 240 characters, so a failure in CI shows the whole run, not the play's first line.
    __repr__ = __str__


def parse_recap(stdout: str) -> dict[str, dict[str, int]]:
    recap: dict[str, dict[str, int]] = {}
    for line in stdout.splitlines():
        m = _RECAP_LINE.match(line.strip())
        if m:
            values = m.groupdict()
            host = values.pop("host")
            recap[host] = {k: int(v) for k, v in values.items()}
    return recap


def _extra_vars_args(extra_vars: Mapping[str, Any] | None) -> list[str]:
    return ["-e", json.dumps(dict(extra_vars))] if extra_vars else []


def run_playbook(
    playbook: str | Path,
    inventory: str | Path | None = None,
    *,
    extra_vars: Mapping[str, Any] | None = None,
    tags: Sequence[str] = (),
    limit: str | None = None,
    check: bool = False,
    diff: bool = False,
    verbose: int = 0,
    env: Mapping[str, str] | None = None,
    timeout: float = 900,
    args: Sequence[str] = (),
    cwd: str | Path = REPO_ROOT,
) -> PlaybookResult:
    """Run ``ansible-playbook`` (in ``cwd``, the checkout by default) and return its result (never raises on a failed play)."""
    cmd = [str(BIN_DIR / "ansible-playbook"), str(playbook)]
    if inventory is not None:
        cmd += ["-i", str(inventory)]
    cmd += _extra_vars_args(extra_vars)
    if tags:
        cmd += ["--tags", ",".join(tags)]
    if limit:
        cmd += ["--limit", limit]
    if check:
        cmd.append("--check")
    if diff:
        cmd.append("--diff")
    if verbose:
        cmd.append("-" + "v" * verbose)
    cmd += list(args)
    proc = subprocess.run(cmd, cwd=cwd, env=ansible_env(env), capture_output=True, text=True, timeout=timeout, check=False)
    fail_on_deprecation(proc.stdout + proc.stderr, f"ansible-playbook {playbook}")
    return PlaybookResult(proc.returncode, proc.stdout, proc.stderr, parse_recap(proc.stdout))


def start_playbook(
    playbook: str | Path, inventory: str | Path, extra_vars: Mapping[str, Any], output: Any, env: Mapping[str, str] | None = None
) -> subprocess.Popen:
    """Start ``ansible-playbook`` in the background, in its own session (a terminal's Ctrl-C reaches its group).

    ``output``: an open file (or ``subprocess.DEVNULL``) for stdout and stderr; ``env``: more environment (ANSIBLE_FORKS).
    The caller waits for or signals it.
    """
    cmd = [str(BIN_DIR / "ansible-playbook"), str(playbook), "-i", str(inventory), *_extra_vars_args(extra_vars)]
    return subprocess.Popen(  # pylint: disable=consider-using-with
        cmd, cwd=REPO_ROOT, env=dict(ansible_env(), **(env or {})), stdout=output, stderr=subprocess.STDOUT, start_new_session=True
    )


def run_adhoc(
    pattern: str,
    module: str,
    module_args: Mapping[str, Any] | str | None = None,
    inventory: str | Path | None = None,
    *,
    check: bool = False,
    env: Mapping[str, str] | None = None,
    timeout: float = 300,
) -> dict[str, dict[str, Any]]:
    """Run ``ansible <pattern> -m <module>`` and return each host's result dict.

    Read from ad-hoc's own output (the ``minimal`` callback: ``host | STATUS => {json}``; ``-o``
    and the oneline callback are deprecated). Each result carries ``_status``: SUCCESS, CHANGED,
    FAILED or UNREACHABLE.
    """
    cmd = [str(BIN_DIR / "ansible"), pattern, "-m", module]
    if module_args is not None:
        cmd += ["-a", module_args if isinstance(module_args, str) else json.dumps(dict(module_args))]
    if inventory is not None:
        cmd += ["-i", str(inventory)]
    if check:
        cmd.append("--check")
    proc = subprocess.run(cmd, cwd=REPO_ROOT, env=ansible_env(env), capture_output=True, text=True, timeout=timeout, check=False)
    fail_on_deprecation(proc.stdout + proc.stderr, f"ansible {pattern} -m {module}")
    results: dict[str, dict[str, Any]] = {}
    decoder = json.JSONDecoder()
    for m in _ADHOC_RESULT.finditer(proc.stdout):
        data, _end = decoder.raw_decode(proc.stdout, m.end())
        data["_status"] = m.group(2)
        results[m.group(1)] = data
    if not results:
        raise AssertionError(f"no host result in ansible output:\n{proc.stdout}\n{proc.stderr}")
    return results


_ADHOC_RESULT = re.compile(r"^(\S+) \| (\w+)!? => ", re.M)


def run_module(
    module: str,
    args: Mapping[str, Any],
    *,
    check: bool = False,
    diff: bool = False,
    env: Mapping[str, str] | None = None,
    timeout: float = 120,
) -> dict[str, Any]:
    """Run ``plugins/modules/<module>.py`` directly (no controller) and return its JSON result.

    Modules accept a JSON file holding ``ANSIBLE_MODULE_ARGS`` as their only argument; this is
    the fastest faithful way to test one module against the simulator.
    """
    payload = dict(args)
    if check:
        payload["_ansible_check_mode"] = True
    if diff:
        payload["_ansible_diff"] = True
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as fh:
        json.dump({"ANSIBLE_MODULE_ARGS": payload}, fh)
        args_path = fh.name
    try:
        run_env = ansible_env(env)
        run_env["PYTHONPATH"] = str(COLLECTIONS_DIR)
        proc = subprocess.run(
            [sys.executable, "-m", f"ansible_collections.ascend.cluster.plugins.modules.{module}", args_path],
            env=run_env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    finally:
        os.unlink(args_path)
    try:
        result = json.loads(proc.stdout)
    except ValueError as exc:
        raise AssertionError(f"module {module} printed no JSON (rc={proc.returncode}):\n{proc.stdout}\n{proc.stderr}") from exc
    if result.get("deprecations"):
        raise DeprecationFound(f"module {module} returned deprecations: {result['deprecations']!r}")
    result["_rc"] = proc.returncode
    return result
