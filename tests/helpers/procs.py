"""Process helpers for tests that start and stop real processes (ranks, runners, leftovers)."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from pathlib import Path

from .collection import install_import_path

install_import_path()  # the benchmarks import these helpers too, without pytest's conftest

from ansible_collections.ascend.cluster.plugins.module_utils._job.procs import stat_fields, tree_pids  # noqa: E402


def alive(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def wait_for(predicate, timeout: float, what: str) -> None:
    """Poll ``predicate`` every 0.5 s; fail naming ``what`` after ``timeout`` seconds."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        if predicate():
            return
        time.sleep(0.5)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def forks_of(pid: int) -> list[int]:
    """The live children of ``pid`` that run its own command line: ansible-playbook's workers (forks of it, one per task
    and host), not the ssh connections or modules they start."""

    def cmdline(of: int) -> bytes | None:
        try:
            return Path(f"/proc/{of}/cmdline").read_bytes()
        except FileNotFoundError:
            return None

    own = cmdline(pid)
    if own is None:
        return []
    found = []
    for child in tree_pids(pid)[1:]:  # descendants, parents first: the direct children are those whose ppid is pid
        state, ppid = (stat_fields(child) + ["", ""])[:2]
        if state != "Z" and ppid == str(pid) and cmdline(child) == own:
            found.append(child)
    return found


def pids_with_argv(*argv: str, environ: str | None = None) -> list[int]:
    """Live processes whose command line is exactly ``argv`` (and, with ``environ``, whose environment has that text: a
    job's own run directory, where other tests' jobs run the same command beside it)."""
    wanted = "\0".join(argv) + "\0"
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if (entry / "cmdline").read_text() != wanted or not alive(int(entry.name)):
                    continue
                if environ is None or environ.encode() in (entry / "environ").read_bytes():
                    found.append(int(entry.name))
            except (FileNotFoundError, ProcessLookupError, PermissionError):
                continue
    return found


def reap(proc) -> None:
    """A process started in its own process group (a playbook) killed with its group if it still runs, and waited for."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def ctrl_c(proc, timeout: float = 60) -> int:
    """SIGINT to a playbook's process group, as a terminal's Ctrl-C sends it; its exit code once it has ended."""
    os.killpg(proc.pid, signal.SIGINT)
    return proc.wait(timeout=timeout)


def finish(procs: list[subprocess.Popen], timeout: float = 60) -> list[tuple[int, str, str]]:
    """``[(rc, stdout, stderr)]`` of processes started with pipes, in order; any still running after ``timeout`` s is killed."""
    out = []
    try:
        for proc in procs:
            stdout, stderr = proc.communicate(timeout=timeout)
            out.append((proc.returncode, stdout, stderr))
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    return out


_FORKING = threading.Lock()


def fork_quietly() -> int:
    """``os.fork()`` in a test process that runs threads (a coordinator's, hypothesis'): Python 3.12+ warns that the
    child may deadlock on a lock another thread held. The tests' children run one call (a socket's bytes, a file read as
    another user) and leave with ``os._exit``, taking no lock the other threads hold, so the warning is expected here."""
    import warnings

    # catch_warnings swaps the process's filters: threads that fork at once (the parallel senders) take turns
    with _FORKING, warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"This process \(pid=\d+\) is multi-threaded", category=DeprecationWarning)
        return os.fork()
