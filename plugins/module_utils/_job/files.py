# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The job-file protocol: where a training job keeps its files, who writes each, and how - the one owner of it.

Everything that reads or writes a job's files, on the servers and on the controller, does it through this module:
the names, the atomic JSON writes and tolerant reads, the abort file's lines and the shell commands the controller
runs over its connection (:func:`gate_command`, :func:`abort_command`, :func:`read_command`), so that each guarantee
below holds whoever writes. See docs/launch.md, *Files*.

On each server, under ``<job_root>/<job_id>/`` (the job's directory):

- ``job.json``: the job's record - run dir, local ranks, the rank table's path and sha256, ``fail_fast`` - written
  once by the launch's stage call (``_job.control.record_job``) before anything starts (:func:`write_json`);
- ``group.key``: the job's group secret, written by the stage call (:func:`write_secret`: mode 0600 from its creation,
  renamed into place);
- ``gate``: the start time, written by the server's supervisor when the group opens the gate
  (``_job.control.open_gate``) or by the controller (:func:`gate_command`), aside and renamed (:func:`gate_text`);
- ``abort``: why the job is being stopped, written by whoever stops it - a failing rank's runner (with fail-fast), a
  supervisor (lost or unstarted ranks, the group's stop), ``training_job state=stop``, the controller (a Ctrl-C, a
  staging failure) - through :func:`record_abort` / :func:`abort_command` only (below);
- ``group.json``: the group's view, written by the coordinator on rank 0's server (``_job.group``, :func:`write_json`
  at most every 0.2 s), read by the controller's watch (:func:`read_command`) and the gate's wait;
- ``member.json``: each server's member's view of the group; ``supervisor.json``: the detached supervisor's result
  (both :func:`write_json`).
- ``coordinator.log``: the coordinator's stderr on its server (:func:`open_coordinator_log`, appended, mode 0600): a
  crash's traceback (``group.json`` says ``crashed`` and names this file).

- ``<job_root>/latest``: the id of the newest job whose gate opened, written with the gate (renamed into place). A job
  refused or interrupted while staging never becomes ``latest``; status, stop and diagnose default to it, or to a newer
  job still staged at its gate (``_job.control.resolve_job_id``).
- ``<run_dir>/rank_table.json`` (:data:`RANK_TABLE`): the job's own rank table, written by the launch with the job's
  record (``_host.text_file``, atomic, mode 0444); ``RANK_TABLE_FILE`` (and ``MINDSPORE_HCCL_CONFIG_PATH``) name it, and its
  sha256, recorded in ``job.json`` (``rank_table_sha256``), is checked by each runner just before it starts its rank
  (:func:`sha256_file`).
- ``<run_dir>/device_<rank>/``: the rank's working directory, written by that rank's runner alone (a node runner writes
  each of its server's ranks'): ``env.log`` (once, at staging), ``train.log`` (the command's output, appended),
  ``state.json`` (:func:`write_json` at every change of ``phase`` - one of :data:`PHASES` -: pids, start/end time in the
  server's clock and ``clock_offset``, that clock's offset against the controller's, exit code, and at the end
  ``stopped_by``: the abort reason that existed when the rank ended, None if none did); and ``error.json``
  (:data:`ERROR_FILE`), written by the training itself when it fails under torch's ``@record``
  (``TORCHELASTIC_ERROR_FILE`` names it, pytorch preset), read by ``_job.torch_error`` for the diagnosis.
- ``<lock_dir>/device_<id>.lock``: the per-device ``flock``, held by the rank's runner (and its command) for its life.

On the controller: ``<controller_dir>/<job_id>/group.json``, the watch's copy of the group's view (:func:`write_json`).

**Atomicity.** Every JSON file is written aside and renamed into place (:func:`write_json`), and read with
:func:`read_json`, which takes a missing or half-replaced file as absent: a reader never sees part of a file.

**The abort file: its first line is the cause.** One line per reason (whitespace folded to single spaces), in the
order they came: the first line is why the job stopped, and every reader of the cause reads that line alone
(:func:`read_abort`; the supervisor passes it to the group, a rank that ends by a stop signal records it as its
``stopped_by``). A failing rank writes ``rank N failed (rc=X)[: why]`` (:func:`failed_line`), a rank that could not
start ``rank N could not start: why`` (:func:`unstarted_line`), anyone else a free-form reason
(:func:`parse_abort_line` tells them apart). The file is written only through :func:`record_abort` (on the server) or
:func:`abort_command` (one shell line from the controller, every word quoted): both make it appear with its first line
already in it - written aside, then hard-linked into place, which fails when another stop got there first, and then
the reason is appended - so a runner that sees the file never reads it empty, and two stops never lose a line.
Runners still at the gate give up when it exists.

Runs on target hosts: Python 3.8+, stdlib only.
"""

from __future__ import annotations

import hashlib
import json
import os
import posixpath
import pwd
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
ERROR_FILE = "error.json"  # the training's own, in its rank directory: torch's @record writes it (TORCHELASTIC_ERROR_FILE)
GROUP_FILE = "group.json"  # the coordinator's view, on its server, in the job's directory (the controller reads it)
MEMBER_FILE = "member.json"  # each member's own view, in the job's directory on its server
SECRET_FILE = "group.key"  # the job's secret (elsewhere than the coordinator's server: that member's key), mode 0600
COORDINATOR_LOG = "coordinator.log"  # the coordinator's stderr, in the job's directory on its server
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
READ_END = "ascend-group-read"
NO_JOB = "ascend-no-job"
MEMBER_MARK = "ascend-member-view"  # what read_command prints between group.json and member.json
DENIED = "ascend-read-denied"  # read_command: the job's files are there, but this user may not read them


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


def denied(path: str) -> str | None:
    """Why this process may not read ``path`` when the reason is a permission (``permission denied: <path> cannot be
    read by user <u> (it belongs to <owner>, mode 0600)``), else None (readable, or missing). For status, stop and
    diagnose, which must not take a job another user's files record for a job that is not there."""
    try:
        if os.path.isdir(path):
            os.listdir(path)
        else:
            with open(path, "rb"):
                pass
        return None
    except PermissionError:
        pass
    except OSError:
        return None
    me = _user(os.geteuid())
    try:
        info = os.stat(path)
        whose = "it belongs to %s, mode %04o" % (_user(info.st_uid), info.st_mode & 0o7777)
    except OSError:
        whose = "its directory may not be searched"
    return "permission denied: %s cannot be read by user %s (%s)" % (path, me, whose)


def _user(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return "uid %d" % uid


def read_latest(job_root: str) -> str | None:
    """The id in ``<job_root>/latest`` (the newest job whose gate opened), None when there is none.

    What ``job_id=latest`` means to status, stop and diagnose is ``_job.control.resolve_job_id`` (it also sees a newer
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


def write_gate(job_dir_path: str, start_at: float) -> None:
    """Open the job's gate here at ``start_at`` (this server's clock): :func:`gate_text`, written aside and renamed."""
    write_json(os.path.join(job_dir_path, GATE_FILE), {"start_at": float(start_at)})


def write_latest(job_root: str, job_id: str) -> None:
    """Make ``job_id`` the job ``<job_root>/latest`` names (written aside, renamed into place)."""
    latest = os.path.join(job_root, LATEST_FILE)
    tmp = "%s.%d.tmp" % (latest, os.getpid())
    with open(tmp, "w") as handle:
        handle.write(job_id + "\n")
    os.rename(tmp, latest)


def gate_command(job_root: str, job_id: str, start_at: float) -> str:
    """One POSIX shell command that opens the job's gate at ``start_at`` and makes the job ``latest``, as
    ``_job.control.open_gate`` does, without a module round trip; refuses a job not recorded under ``job_root``.

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


def write_secret(job_dir_path: str, secret: str) -> str:
    """The job's group secret into ``<job_dir>/group.key``, mode 0600 from its creation (written aside, renamed into
    place); the path."""
    path = os.path.join(job_dir_path, SECRET_FILE)
    tmp = "%s.%d.tmp" % (path, os.getpid())
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.fchmod(fd, 0o600)
        os.write(fd, secret.encode("utf-8"))
    finally:
        os.close(fd)
    os.rename(tmp, path)
    return path


def read_command(job_dir_path: str) -> str:
    """One POSIX shell command that prints the coordinator's ``group.json`` (the controller's watch) and, after
    :data:`MEMBER_MARK`, that server's ``member.json``; it says when the job is not recorded in ``job_dir_path`` at all,
    and when its group view is there but this user may not read it. See :func:`parse_read`, :func:`parse_member` and
    :func:`read_denied`."""
    group = quote(posixpath.join(job_dir_path, GROUP_FILE))
    return (
        "test -f %s || echo %s; { test ! -e %s || test -r %s || echo %s; }; cat %s 2>/dev/null; echo; echo %s; cat %s 2>/dev/null; echo; echo %s"
        % (
            quote(posixpath.join(job_dir_path, JOB_FILE)),
            NO_JOB,
            group,
            group,
            DENIED,
            group,
            MEMBER_MARK,
            quote(posixpath.join(job_dir_path, MEMBER_FILE)),
            READ_END,
        )
    )


def parse_read(stdout: str) -> tuple:
    """``(ran, text)``: whether :func:`read_command` ran through, and the group view's text ('' when there is none yet,
    None when the job is not recorded there)."""
    head, sep, _tail = stdout.rpartition(READ_END)
    if NO_JOB in head.splitlines()[:1]:
        return bool(sep), None
    group = head.rpartition(MEMBER_MARK)[0] if MEMBER_MARK in head else head
    return bool(sep), "\n".join(line for line in group.strip().splitlines() if line != DENIED).strip()


def parse_member(stdout: str) -> str:
    """The text of ``member.json`` that :func:`read_command` printed ('' when none)."""
    head = stdout.rpartition(READ_END)[0]
    return head.rpartition(MEMBER_MARK)[2].strip() if MEMBER_MARK in head else ""


def read_denied(stdout: str) -> bool:
    """Whether :func:`read_command` found the group view there but unreadable for the user it ran as."""
    return DENIED in stdout.rpartition(MEMBER_MARK)[0].splitlines()


def open_coordinator_log(job_dir_path: str) -> int:
    """The coordinator's stderr: ``coordinator.log`` in the job's directory, opened to append (mode 0600); its fd."""
    return os.open(os.path.join(job_dir_path, COORDINATOR_LOG), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
