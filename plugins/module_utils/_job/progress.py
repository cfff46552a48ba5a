# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Stall detection: whether a running rank still makes progress, and what a stalled one is told.

A rank stuck in a collective that never completes prints nothing and exits nothing: every rank looks
``running`` until HCCL's own ``HCCL_EXEC_TIMEOUT`` (1836 s) ends it, and nothing names the cause. The
runners (``_job.runner``, ``_job.node_runner``) sample each rank's ``train.log`` about once a second
with a :class:`ProgressMeter`: by default its growth (one ``os.stat``), with ``progress_regex`` the
complete new lines matching it (the new bytes only, read from the last offset). A rank with no progress
for ``stall_timeout`` seconds, counted from its start, is stopped as failed; :func:`why` is its abort
reason and ``state.json`` keeps :meth:`ProgressMeter.stalled`'s record (plus the Python stacks
:func:`py_spy_stacks` took before the rank was stopped). Everything that decides or words a stall is here.

Runs on target hosts: Python 3.8+, stdlib only.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time

from ansible_collections.ascend.cluster.plugins.module_utils._job.procs import stat_fields

SAMPLE_S = 1.0  # how often a runner samples its ranks' logs
READ_CHUNK = 1024 * 1024  # new bytes read at a time (a regex meter)
MAX_PARTIAL = 64 * 1024  # the most of an unfinished last line kept for matching
LAST_LINE_CHARS = 200
STACK_LINES = 60  # the most lines of py-spy stacks kept per stalled rank
PY_SPY_S = 10.0  # py-spy's time for all of a rank's processes together
PY_SPY_PROCESSES = 4
STALLED = "stalled: "


def compile_progress(regex: str | None):
    """The compiled ``progress_regex`` (None for ""), or ValueError saying what is wrong with it."""
    if not regex:
        return None
    try:
        return re.compile(regex)
    except re.error as exc:
        raise ValueError(
            "progress_regex %r is not a valid regular expression (%s): write it as Python's re module reads it, "
            "e.g. 'step \\d+'" % (regex, exc)
        ) from None


def why(record: dict) -> str:
    """The words of a stall (the rank's abort reason), from :meth:`ProgressMeter.stalled`'s record."""
    silent = "%d s" % round(float(record.get("silent_s") or 0))
    regex = record.get("regex")
    what = "no line matching '%s' for %s" % (regex, silent) if regex else "no progress for %s" % silent
    line = record.get("last_line")
    last = 'last line: "%s"' % line if line else "the log is empty"
    return "%s%s; %s" % (STALLED, what, last)


class ProgressMeter:
    """One rank's progress, read from its log ``path``; stalled after ``timeout`` silent seconds (0: never).

    ``regex`` ("" or None: any output counts) is checked by the caller first (:func:`compile_progress`);
    ``started``: when the rank started (its silence counts from there). Give :meth:`sample` the time:
    the meter has no clock of its own.
    """

    def __init__(self, path: str, timeout: float, regex: str | None = None, started: float = 0.0) -> None:
        self.path = path
        self.timeout = float(timeout or 0)
        self.regex = regex or None
        self.pattern = compile_progress(regex)
        self.last_progress = float(started)
        self.offset = 0  # bytes of the log read (a regex meter) or seen (a size meter)
        self.partial = b""  # the unfinished last line read so far

    def sample(self, now: float) -> float | None:
        """Look at the log once; the seconds the rank has been silent when that reaches the timeout, else None."""
        if self.news():
            self.last_progress = now
        silent = now - self.last_progress
        return silent if 0 < self.timeout <= silent else None

    def news(self) -> bool:
        """Whether the log made progress since the last look: grew, or (with a regex) got a complete matching line."""
        try:
            size = os.stat(self.path).st_size
        except OSError:
            return False
        if size < self.offset:  # truncated or replaced: read it again from its start
            self.offset, self.partial = 0, b""
        if size == self.offset:
            return False
        if self.pattern is None:
            self.offset = size
            return True
        return self._matching_lines()

    def _matching_lines(self) -> bool:
        found = False
        try:
            with open(self.path, "rb") as handle:
                handle.seek(self.offset)
                while True:
                    data = handle.read(READ_CHUNK)
                    if not data:
                        break
                    self.offset += len(data)
                    lines = (self.partial + data).split(b"\n")
                    self.partial = lines.pop()[-MAX_PARTIAL:]
                    found = found or any(self.pattern.search(line.decode("utf-8", "replace")) for line in lines)
        except OSError:
            pass
        return found

    def stalled(self, silent_s: float, last_line: str | None) -> dict:
        """The record of this rank's stall (``state.json`` ``stalled``; :func:`why` words it)."""
        line = (last_line or "").strip()
        if len(line) > LAST_LINE_CHARS:
            line = "..." + line[-LAST_LINE_CHARS:]
        return {"silent_s": round(float(silent_s), 1), "last_line": line, "regex": self.regex, "stack": []}


def _comm(pid: int) -> str:
    try:
        with open("/proc/%d/comm" % pid) as handle:
            return handle.read().strip()
    except OSError:
        return ""


def _exe(pid: int) -> str:
    try:
        return os.path.basename(os.readlink("/proc/%d/exe" % pid))
    except OSError:
        return ""


def python_pids(pids) -> list:
    """Those of ``pids`` whose command or executable names Python (``python3``, ``python3.10``, ...)."""
    return sorted(int(p) for p in pids if "python" in _comm(int(p)) or "python" in _exe(int(p)))


def group_pids(pgid: int) -> list:
    """Every process of the process group ``pgid`` (Linux ``/proc``)."""
    return sorted(int(name) for name in os.listdir("/proc") if name.isdigit() and stat_fields(name)[2:3] == [str(pgid)])


def py_spy_stacks(pids: list, budget: float = PY_SPY_S, limit: int = STACK_LINES) -> list:
    """``py-spy dump`` of the Python processes among ``pids`` (when py-spy is on PATH): at most ``limit`` lines.

    The first :data:`PY_SPY_PROCESSES` processes, lowest pid first (the rank's main process before its workers),
    all within ``budget`` seconds; a dump that fails says why in one line. [] without py-spy or Python processes.
    """
    program = shutil.which("py-spy")
    if not program:
        return []
    lines: list = []
    deadline = time.time() + budget
    for pid in python_pids(pids)[:PY_SPY_PROCESSES]:
        left = deadline - time.time()
        if left <= 0 or len(lines) >= limit:
            break
        try:
            # the tool's output is what is kept: run it directly, never through a shell, with a deadline
            done = subprocess.run(  # pylint: disable=ansible-bad-function
                [program, "dump", "--pid", str(pid)],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                timeout=left,
                check=False,
            )
            text = done.stdout.decode("utf-8", "replace").rstrip()
            if done.returncode != 0:
                text = "py-spy dump --pid %d failed (rc=%d): %s" % (pid, done.returncode, " ".join(text.split())[:300])
        except subprocess.TimeoutExpired:
            text = "py-spy dump --pid %d took longer than %.0f s" % (pid, budget)
        except OSError as exc:
            text = "py-spy dump --pid %d could not run: %s" % (pid, exc)
        lines.extend(line for line in text.splitlines() if line.strip())
    return lines[:limit]
