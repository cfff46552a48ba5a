# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where a training job keeps its files, and atomic JSON reads/writes for them.

Layout on each server (see docs/launch.md):

- ``<job_root>/<job_id>/job.json``   the job record (run dir, local ranks) written before launch;
- ``<job_root>/<job_id>/gate``       written by the controller once every rank is staged: start time;
- ``<job_root>/<job_id>/abort``      why the job is being stopped, one line per reason, the first
  one first: a failing rank's runner writes ``rank N failed (rc=X)`` (:func:`failed_line`), stop and
  the watchers a free-form reason. Runners still at the gate give up when it exists;
- ``<job_root>/latest``              the id of the newest job whose gate opened (a job refused or
  interrupted while staging never becomes ``latest``; status, stop and diagnose default to it, or to a
  newer job still staged at its gate: ``_job_control.resolve_job_id``);
- ``<run_dir>/rank_table.json``      the job's own rank table (:data:`RANK_TABLE`), written by the launch with the job's
  record, mode 0444; ``RANK_TABLE_FILE`` (and ``MINDSPORE_HCCL_CONFIG_PATH``) name it, and its sha256, recorded in
  ``job.json`` (``rank_table_sha256``), is checked by each runner just before it starts its rank (:func:`sha256_file`);
- ``<run_dir>/device_<rank>/``       the rank's working directory: ``env.log``, ``train.log``,
  ``state.json`` (``phase`` - one of :data:`PHASES` -, pids, start/end time in the server's clock and
  ``clock_offset``, that clock's offset against the controller's, exit code, and at the end ``stopped_by``:
  the abort reason that existed when the rank ended, None if none did);
- ``<lock_dir>/device_<id>.lock``    per-device ``flock``, held by the rank for its lifetime.

The controller opens a gate and records a stop with one shell command each (:func:`gate_command`,
:func:`abort_command`), so everything that knows how the files look is here.

Runs on target hosts: Python 3.8+, stdlib only.
"""

from __future__ import annotations

import hashlib
import json
import os
import posixpath
import re
import tempfile
from shlex import quote
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any

JOB_FILE = "job.json"
# The job's own rank table, in its run directory: no other job and no prepare / rank_table run writes there.
RANK_TABLE = "rank_table.json"
GATE_FILE = "gate"
ABORT_FILE = "abort"
LATEST_FILE = "latest"
STATE_FILE = "state.json"
ENV_LOG = "env.log"
TRAIN_LOG = "train.log"
# The detached supervisor's result (training_ranks with detach): {"started": 1, "finished": 0} while it runs,
# then the module's result, as Ansible's async wrapper writes its results file (training_results reads either).
SUPERVISOR_FILE = "supervisor.json"

# A rank's phases (state.json ``phase``), in the order of its life; the last four are final.
STAGING = "staging"
STAGED = "staged"
RUNNING = "running"
EXITED = "exited"
REFUSED = "refused"
ABORTED = "aborted"
GATE_TIMEOUT = "gate_timeout"
PHASES = (STAGING, STAGED, RUNNING, EXITED, REFUSED, ABORTED, GATE_TIMEOUT)
FINAL_PHASES = (EXITED, REFUSED, ABORTED, GATE_TIMEOUT)

# How write_json separates items and keys from values: fixed here, so that a phase's exact text in
# state.json (phase_text) is known to the shell probe, whatever json.dump's defaults become.
JSON_SEPARATORS = (", ", ": ")

_FAILED_LINE = re.compile(r"^rank (\d+) failed \(rc=(-?\d+)\)(?:: (.*))?$")
_UNSTARTED_LINE = re.compile(r"^rank (\d+) could not start: (.*)$")
_GATE_END = "ascend-gate-ok"
_ABORT_END = "ascend-abort-ok"


def job_dir(job_root: str, job_id: str) -> str:
    return os.path.join(job_root, job_id)


def rank_dir(run_dir: str, rank_id: int) -> str:
    return os.path.join(run_dir, "device_%d" % int(rank_id))


def job_table_path(run_dir: str) -> str:
    """The job's own rank table: ``<run_dir>/rank_table.json``."""
    return os.path.join(run_dir, RANK_TABLE)


def sha256_file(path: str) -> str:
    """The hex sha256 of the file's bytes (OSError when it cannot be read)."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(65536), b""):
            digest.update(block)
    return digest.hexdigest()


def lock_path(lock_dir: str, device_id: int) -> str:
    return os.path.join(lock_dir, "device_%d.lock" % int(device_id))


def write_json(path: str, data: object) -> None:
    """Write JSON atomically (temp file in the same directory, then rename)."""
    directory = os.path.dirname(path) or "."
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=directory)
    try:
        with os.fdopen(fd, "w") as handle:
            json.dump(data, handle, sort_keys=True, separators=JSON_SEPARATORS)
        os.rename(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def read_json(path: str, default: Any = None) -> Any:
    """The JSON in ``path``, or ``default`` when it does not exist (or is being replaced)."""
    try:
        with open(path) as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return default


def read_latest(job_root: str) -> str | None:
    """The id in ``<job_root>/latest`` (the newest job whose gate opened), None when there is none.

    What ``job_id=latest`` means to status, stop and diagnose is ``_job_control.resolve_job_id`` (it also sees a newer
    job still staged at its gate).
    """
    try:
        with open(os.path.join(job_root, LATEST_FILE)) as handle:
            return handle.read().strip() or None
    except OSError:
        return None


def list_jobs(job_root: str) -> list:
    """Ids of every job recorded under ``job_root``, oldest first."""
    try:
        names = os.listdir(job_root)
    except OSError:
        return []
    jobs = [n for n in names if os.path.isfile(os.path.join(job_root, n, JOB_FILE))]
    return sorted(jobs, key=lambda n: os.path.getmtime(os.path.join(job_root, n, JOB_FILE)))


def phase_text(phase: str) -> str:
    """The exact text :func:`write_json` writes for ``phase`` in a state file (``"phase": "exited"``)."""
    return json.dumps({"phase": phase}, separators=JSON_SEPARATORS)[1:-1]


def failed_line(rank_id: int, rc: object, why: str | None = None) -> str:
    """The abort line of a failing rank: ``rank N failed (rc=X)``, with ``: why`` when known."""
    line = "rank %d failed (rc=%s)" % (int(rank_id), rc)
    return "%s: %s" % (line, why) if why else line


def unstarted_line(rank_id: int, why: str) -> str:
    """The abort line of a rank that failed before its command started: ``rank N could not start: why`` (its device
    refused, its gate timed out, its rank table changed after the launch wrote it)."""
    return "rank %d could not start: %s" % (int(rank_id), why)


def parse_abort_line(line: str) -> dict:
    """An abort line as ``{"reason", "rank_id", "rc", "why"}``; ``rank_id`` None unless a rank failed (``rc`` None for a
    rank that could not start: :func:`unstarted_line`)."""
    line = line.strip()
    found = _FAILED_LINE.match(line)
    if found:
        return {"reason": line, "rank_id": int(found.group(1)), "rc": int(found.group(2)), "why": found.group(3)}
    found = _UNSTARTED_LINE.match(line)
    if found:
        return {"reason": line, "rank_id": int(found.group(1)), "rc": None, "why": found.group(2)}
    return {"reason": line, "rank_id": None, "rc": None, "why": None}


def record_abort(job_dir_path: str, reason: str) -> None:
    """Append ``reason`` as one line to the job's abort file (the first line is the first reason).

    The file appears with its first line already in it (written aside, then hard-linked into place,
    which fails if another stop got there first): a runner that sees the file never reads it empty.
    """
    line = " ".join(reason.split()) + "\n"
    path = os.path.join(job_dir_path, ABORT_FILE)
    if not os.path.exists(path):
        aside = "%s.%d.tmp" % (path, os.getpid())
        try:
            with open(aside, "w") as handle:
                handle.write(line)
            os.link(aside, path)
            return
        except OSError:
            pass  # another stop was first (or no hard links here): append below
        finally:
            try:
                os.unlink(aside)
            except OSError:
                pass
    with open(path, "a") as handle:
        handle.write(line)


def abort_command(job_dir_path: str, reason: str) -> str:
    """One POSIX shell command that records ``reason`` as :func:`record_abort` does (the file appears with its first line
    already in it: written aside, then hard-linked into place; appended when another stop was first). For the
    controller, which stops a job through the group by writing this on the coordinator's server. Output for
    :func:`parse_abort_command`."""
    line = quote(" ".join(reason.split()))
    path = quote(posixpath.join(job_dir_path, ABORT_FILE))
    missing = quote("no job recorded in %s on this host" % job_dir_path)
    return (
        "test -d %s || { echo %s; exit 3; }; " % (quote(job_dir_path), missing)
        + "if test -e %s; then printf '%%s\n' %s >> %s; " % (path, line, path)
        + "else printf '%%s\n' %s > %s.$$ && { ln %s.$$ %s 2>/dev/null || printf '%%s\n' %s >> %s; }; rm -f %s.$$; fi"
        % (line, path, path, path, line, path, path)
        + " && echo %s" % _ABORT_END
    )


def parse_abort_command(stdout: str) -> str | None:
    """None when :func:`abort_command` recorded the reason, else what it printed instead (why not)."""
    lines = [line.strip() for line in stdout.splitlines()]
    return None if _ABORT_END in lines else (" ".join(line for line in lines if line) or "no answer")


def read_abort(job_dir_path: str) -> str | None:
    """The job's first abort reason; None when nobody stopped it ("" if the file is still empty)."""
    try:
        with open(os.path.join(job_dir_path, ABORT_FILE)) as handle:
            return handle.readline().strip()
    except OSError:
        return None


def gate_text(start_at: float) -> str:
    """The gate file's text for ``start_at``, as :func:`write_json` writes it (the runners read it with :func:`read_json`)."""
    return json.dumps({"start_at": float(start_at)}, sort_keys=True, separators=JSON_SEPARATORS)


def gate_command(job_root: str, job_id: str, start_at: float) -> str:
    """One POSIX shell command that opens the job's gate at ``start_at`` and makes the job ``latest``, as
    ``_job_control.open_gate`` does, without a module round trip; refuses a job not recorded under ``job_root``.

    Both files are written beside their place and renamed over it. The output is for :func:`parse_gate`.
    """
    directory = posixpath.join(job_root, job_id)
    gate, latest = posixpath.join(directory, GATE_FILE), posixpath.join(job_root, LATEST_FILE)
    missing = "job %s is not recorded under %s on this host" % (job_id, job_root)
    return (
        "test -f %s || { echo %s; exit 3; }" % (quote(posixpath.join(directory, JOB_FILE)), quote(missing))
        + "; printf '%%s' %s > %s && mv -f %s %s" % (quote(gate_text(start_at)), quote(gate + ".tmp"), quote(gate + ".tmp"), quote(gate))
        + " && printf '%%s\\n' %s > %s && mv -f %s %s" % (quote(job_id), quote(latest + ".tmp"), quote(latest + ".tmp"), quote(latest))
        + " && echo %s" % _GATE_END
    )


def parse_gate(stdout: str) -> str | None:
    """None when :func:`gate_command` opened the gate, else what it printed instead (why not)."""
    lines = [line.strip() for line in stdout.splitlines()]
    return None if _GATE_END in lines else (" ".join(line for line in lines if line) or "no answer")
