# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""One server's view of a training job: record it, wait for staging, open the gate, report, stop.

Every function reads the files the rank runners write (see ``_job_files``), so the controller
needs no memory of its own: a new controller (``status.yml``, ``stop.yml``) finds everything.

Rank states reported (``state``): ``pending`` (runner not started yet), ``staged`` (waiting at
the gate), ``running``, ``done`` (exit 0), ``failed`` (non-zero exit, killed by a signal nobody of
ours sent - the OOM killer's SIGKILL, a SIGSEGV -, stopped by its runner for running too long or for
a stall, device refused, gate timeout, or runner and training vanished without a word: ``lost``),
``stopped`` (ended by stop / fail-fast: a stop signal after an abort reason was recorded, see
:func:`classify`).

Whether one rank's failure stops the others (fail-fast) is decided by :func:`fail_fast` alone, from the one option the
launch carries (``ascend_launch_fail_fast`` -> the runners' ``fail_fast`` -> ``job.json``).

Runs on target hosts: Python 3.8+, stdlib only.
"""

from __future__ import annotations

import hashlib
import os
import signal
import time

from ansible_collections.ascend.cluster.plugins.module_utils import _job_files as files
from ansible_collections.ascend.cluster.plugins.module_utils import _job_progress as progress
from ansible_collections.ascend.cluster.plugins.module_utils import _text_file as text_file
from ansible_collections.ascend.cluster.plugins.module_utils._job_procs import group_alive, kill_groups, pid_alive, signal_death, wait_gone

# How a rank we stop ends: killed by our TERM or KILL, or a shell reporting its child's death by them.
STOP_SIGNALS = (-signal.SIGTERM, -signal.SIGKILL)
STOP_EXIT_CODES = STOP_SIGNALS + (128 + signal.SIGTERM, 128 + signal.SIGKILL)
FINAL = ("done", "failed", "stopped")
TIMED_OUT = "stopped after running longer than the launch timeout"
VANISHED = "the rank's processes vanished without recording an exit code (killed -9?)"
RUNNER_DIED = "its runner died without recording an exit (killed -9?); the training, process group %s, was left unsupervised"
FAIL_FAST = True  # the default of fail_fast: one rank's failure stops the job's other ranks
LEFT_BEHIND = "left on this server: "  # how left_behind's words begin
JOB_TABLE_MODE = 0o444  # the job's own rank table: read-only, nobody is meant to edit it
LOST_PHASES = (files.STAGING, files.STAGED, files.RUNNING)  # a failed rank still in one of these is lost


class JobError(Exception):
    """The job cannot be found or used; the message says what to do."""


def tail(path: str, lines: int) -> list:
    """The last ``lines`` lines of a text file ([] when missing)."""
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(0, size - 64 * 1024))
            data = handle.read().decode("utf-8", "replace")
    except OSError:
        return []
    return data.splitlines()[-lines:] if lines > 0 else []


def record_job(job_root: str, job: dict) -> str:
    """Write ``job.json`` (fresh gate/abort); returns the job dir.

    ``latest`` is not moved here: a job that is refused or interrupted before its gate opens never
    becomes the one status and stop pick by default (:func:`open_gate` moves it).
    """
    directory = files.job_dir(job_root, job["job_id"])
    os.makedirs(directory, 0o755, exist_ok=True)
    for name in (files.GATE_FILE, files.ABORT_FILE):
        path = os.path.join(directory, name)
        if os.path.exists(path):
            os.unlink(path)
    job = dict(job, recorded_at=time.time())
    files.write_json(os.path.join(directory, files.JOB_FILE), job)
    return directory


def load_job(job_root: str, job_id: str) -> dict:
    """The record of the job ``job_id`` names on this server (:func:`resolve_job_id`)."""
    resolved = resolve_job_id(job_root, job_id)
    if not resolved:
        why = files.denied(os.path.join(job_root, files.LATEST_FILE)) or files.denied(job_root)
        if why is not None:
            raise JobError("%s: run it as that user, or as root (become, -b)" % why)
        raise JobError("no training job recorded under %s on this host (nothing launched here yet)" % job_root)
    path = os.path.join(files.job_dir(job_root, resolved), files.JOB_FILE)
    job = files.read_json(path)
    if not isinstance(job, dict):
        why = files.denied(path)
        if why is not None:  # recorded, but not for this user's eyes: said so, never "not recorded"
            raise JobError("%s: run it as that user, or as root (become, -b)" % why)
        raise JobError(
            "job %s is not recorded under %s on this host; known jobs: %s"
            % (resolved, job_root, ", ".join(files.list_jobs(job_root)) or "none")
        )
    return job


def classify(state: dict | None, aborted: bool) -> str:
    """A rank's ``state`` from its state file; ``aborted``: the job's abort file exists now.

    A rank that exited by a stop signal (or a shell's 143 / 137) counts as ``stopped`` only when an
    abort reason was recorded before it died (its runner saves that reason as ``stopped_by``): then
    we stopped it. The same signal without one came from elsewhere (the OOM killer, an operator's
    kill) and is a failure. State files of runners that predate ``stopped_by`` fall back to whether
    the abort file exists now.
    """
    if not state:
        return "pending"
    phase = state.get("phase")
    if phase in (files.STAGING, files.STAGED):
        return "staged" if pid_alive(state.get("runner_pid")) else "failed"
    if phase == files.RUNNING:
        # The runner records the exit; without it the rank is lost, even when its training still
        # runs (stop_job kills that orphaned process group by its recorded pgid). State files
        # without a runner pid fall back to the training's group.
        runner = state.get("runner_pid")
        if pid_alive(runner) if runner else group_alive(state.get("pgid")):
            return "running"
        return "failed"
    if phase == files.EXITED:
        rc = state.get("rc")
        if state.get("timed_out") or state.get("stalled"):  # stopped by its runner, for a fault of its own
            return "failed"
        if state.get("stopped_by_launcher"):  # a per-node launcher stopped it when another of its ranks failed
            return "stopped"
        if rc == 0:
            return "done"
        stopped_by_us = bool(state["stopped_by"]) if "stopped_by" in state else aborted
        return "stopped" if stopped_by_us and rc in STOP_EXIT_CODES else "failed"
    if phase == files.ABORTED:
        return "stopped"
    return "failed"


def failure_cause(state: dict | None, rank_state: str) -> str | None:
    """Why a rank in ``rank_state`` failed, when its state file says more than its exit code."""
    state = state or {}
    if state.get("timed_out"):
        return TIMED_OUT
    if state.get("stalled"):
        return progress.why(state["stalled"])
    if rank_state != "failed":
        return None
    if state.get("phase") in LOST_PHASES:
        if state.get("phase") == files.RUNNING and group_alive(state.get("pgid")):
            return RUNNER_DIED % state.get("pgid")
        return VANISHED
    return state.get("error") or signal_death(state.get("rc"))


def stopped_by_its_runner(cause: object) -> bool:
    """Whether ``cause`` (:func:`failure_cause`) says the rank's own runner stopped it for a fault of its own (it ran
    too long, it stalled): its signal is then ours, and the cause is how the rank ended."""
    return isinstance(cause, str) and (cause == TIMED_OUT or cause.startswith(progress.STALLED))


def _read_state(rdir: str) -> dict | None:
    state = files.read_json(os.path.join(rdir, files.STATE_FILE))
    return state if isinstance(state, dict) else None


def rank_states(job_root: str, job: dict, tail_lines: int = 0, tail_failed: int = 0) -> list:
    """One dict per local rank: ids, ``state``, ``rc``, times, pids, log path, log tail.

    The tail has ``tail_lines`` lines, or ``tail_failed`` for failed ranks when that is larger.
    """
    aborted = files.read_abort(files.job_dir(job_root, job["job_id"])) is not None
    ranks = []
    for rank in job["ranks"]:
        rdir = files.rank_dir(job["run_dir"], rank["rank_id"])
        state = _read_state(rdir)
        verdict = classify(state, aborted)
        if verdict == "failed" and (state or {}).get("phase") in LOST_PHASES:
            # A runner records its rank's exit, then exits: read between the two, the file still said running and
            # the runner was already gone. Read once more: the record is there now, or the rank really is lost.
            state = _read_state(rdir)
            verdict = classify(state, aborted)
        summary = {
            "rank_id": rank["rank_id"],
            "device_id": rank["device_id"],
            "state": verdict,
            "phase": (state or {}).get("phase"),
            "rc": (state or {}).get("rc"),
            "started": (state or {}).get("started"),
            "ended": (state or {}).get("ended"),
            "pid": (state or {}).get("pid"),
            "runner_pid": (state or {}).get("runner_pid"),
            "log": os.path.join(rdir, files.TRAIN_LOG),
            "error": (state or {}).get("error"),
            "stopped_by": (state or {}).get("stopped_by"),
            "clock_offset": (state or {}).get("clock_offset"),
        }
        summary["error"] = failure_cause(state, summary["state"]) or summary["error"]
        if summary["started"] and summary["ended"]:
            summary["duration"] = round(summary["ended"] - summary["started"], 3)
        lines = max(tail_lines, tail_failed) if summary["state"] == "failed" else tail_lines
        if lines:
            summary["tail"] = tail(summary["log"], lines)
        ranks.append(summary)
    return ranks


def resolve_job_id(job_root: str, job_id: str, stopped_by: str | None = None) -> str | None:
    """The job ``job_id`` names on this server, for status, stop and diagnose alike; None when there is none.

    ``latest`` is the newest job whose gate opened (``<job_root>/latest``), unless a job recorded after it is still
    staged at its gate (:func:`staged_job`: the launch that staged it was interrupted or killed before the gate, or is
    still under way): status then shows that job, stop releases it, diagnose reads it. Other ids are returned as given.
    """
    if job_id != "latest":
        return job_id
    started = files.read_latest(job_root)
    return staged_job(job_root, started, stopped_by) or started


def staged_job(job_root: str, after: str | None, stopped_by: str | None = None) -> str | None:
    """The newest job recorded after the job ``after`` (after none: any) whose gate never opened and whose runners
    still wait at it (a rank ``staged``, its runner alive); None when there is none.

    With ``stopped_by`` (a stop's reason), a job whose ranks that stop has already ended counts too: the job's group
    passes a stop that reached another server first to this server's runners within a fraction of a second, before
    this server's own stop call may have looked.
    """
    jobs = files.list_jobs(job_root)
    if after in jobs:
        jobs = jobs[jobs.index(after) + 1 :]
    for job_id in reversed(jobs):
        directory = files.job_dir(job_root, job_id)
        job = files.read_json(os.path.join(directory, files.JOB_FILE))
        if os.path.exists(os.path.join(directory, files.GATE_FILE)) or not isinstance(job, dict) or not isinstance(job.get("ranks"), list):
            continue
        for rank in rank_states(job_root, job):
            if rank["state"] == "staged" or (stopped_by and stopped_by in str(rank.get("stopped_by") or "")):
                return job_id
    return None


def wait_staged(job_root: str, job: dict, timeout: float) -> list:
    """Block until every local rank is staged (or any ended/failed, or ``timeout``); the states."""
    deadline = time.time() + timeout
    while True:
        ranks = rank_states(job_root, job)
        if all(r["state"] != "pending" and r["phase"] != "staging" for r in ranks) or time.time() > deadline:
            return ranks
        time.sleep(0.05)


def staging_failure(ranks: list, left: str | None = None) -> str | None:
    """The message for ranks that could not stage (``wait_staged``'s states), None when all did; ``left``
    (:func:`left_behind`) says what stays on the server."""
    bad = [r for r in ranks if r["state"] != "staged"]
    if not bad:
        return None
    message = "ranks could not stage, nothing was started: %s" % "; ".join(
        "rank %d (device %d): %s" % (r["rank_id"], r["device_id"], r["error"] or r["state"]) for r in bad
    )
    return "%s; %s" % (message, left) if left else message


def _entries(directory: str, most: int = 20) -> str:
    """The names in ``directory`` now (folders with a ``/``), sorted; ``none`` when it is empty or missing."""
    try:
        names = sorted(n + "/" if os.path.isdir(os.path.join(directory, n)) else n for n in os.listdir(directory))
    except OSError:
        names = []
    shown = ", ".join(names[:most]) or "none"
    return shown + (" and %d more" % (len(names) - most) if len(names) > most else "")


def left_behind(job_root: str, job: dict, lock_dir: str | None = None) -> str:
    """Exactly what a launch that failed while staging leaves on a server where it recorded the job, as it is now: the
    job's record and run directory (with its own rank table), the lock files of its devices that exist (free once its
    runners ended); it never writes the shared rank table."""
    directory = files.job_dir(job_root, job["job_id"])
    left = LEFT_BEHIND + "job %s's record %s (%s) and run directory %s (%s), kept for status and diagnose" % (
        job["job_id"],
        directory,
        _entries(directory),
        job["run_dir"],
        _entries(job["run_dir"]),
    )
    devices = sorted(int(r["device_id"]) for r in job["ranks"] if lock_dir and os.path.exists(files.lock_path(lock_dir, r["device_id"])))
    if devices:
        left += ", and the lock file%s of device%s %s in %s" % (
            "s" if len(devices) > 1 else "",
            "s" if len(devices) > 1 else "",
            ", ".join(str(d) for d in devices),
            lock_dir,
        )
    return left + "; no shared rank table was written"


class RankTableMismatch(JobError):
    """The job's rank table on disk is not the job's (``record_with_table``); ``steps`` are what writing it did."""

    def __init__(self, message: str, steps: list) -> None:
        super().__init__(message)
        self.steps = steps


def record_with_table(
    job_root: str, job: dict, table_path: str | None, table_text: str | None, write: bool, check_mode: bool = False
) -> dict:
    """Write (``write``) or only check the job's own rank table at ``table_path``, then record ``job`` with the table's path
    and sha256; nothing is recorded for a wrong table.

    ``table_path`` must be the job's copy in its run directory (``_job_files.job_table_path``): no other job, and no
    prepare or rank_table run, writes there, so nothing swaps the table the job's ranks read (``RANK_TABLE_FILE``); each
    runner checks the recorded sha256 just before it starts its rank. The shared table (``ascend_rank_table_path``) is
    never written here. The result's ``rank_table_steps`` (with ``table_path``): what writing the file did, and
    ``rank_table_path`` / ``rank_table_sha256``. Raises :class:`JobError` when the path is not the job's copy or the
    file cannot be written, :class:`RankTableMismatch` when what is read back is not the job's table.
    """
    table: dict = {}
    record = {
        "job_id": job["job_id"],
        "run_dir": job["run_dir"],
        "ranks": [{"rank_id": int(r["rank_id"]), "device_id": int(r["device_id"])} for r in job["ranks"]],
        "fail_fast": fail_fast(job),
    }
    if table_path:
        own = files.job_table_path(job["run_dir"])
        if os.path.normpath(table_path) != os.path.normpath(own):
            raise JobError(
                "rank_table_path %s is not job %s's own copy of its rank table, %s: the ranks read only the table the launch "
                "writes into the job's run directory, which nothing else writes (a shared path such as /etc/ascend/rank_table.json "
                "is rewritten by prepare, rank_table or a hand); pass %s" % (table_path, job["job_id"], own, own)
            )
        steps: list = []
        if write:
            try:
                steps = text_file.apply_text_file(table_path, table_text or "", JOB_TABLE_MODE, check_mode=check_mode)["steps"]
            except OSError as exc:
                raise JobError(
                    "cannot write %s: %s; run the task as root (become) or choose another run directory" % (table_path, exc)
                ) from exc
        table["rank_table_steps"] = steps
        if check_mode and steps:
            digest = hashlib.sha256((table_text or "").encode("utf-8")).hexdigest()
        else:
            # read once: the bytes checked are the bytes whose digest is recorded (a second read could see a file swapped
            # in between, which the runners would then take for the launch's own)
            try:
                with open(table_path, "rb") as handle:
                    found = handle.read()
            except FileNotFoundError:
                found = b""
            except OSError as exc:
                raise JobError("cannot read %s back: %s" % (table_path, exc)) from exc
            if not text_file.json_matches(found, table_text or ""):
                raise RankTableMismatch(
                    "%s is not the job's rank table (it changed after the launch wrote it): nothing was started; check what else "
                    "writes the job's run directory, then launch again" % table_path,
                    steps,
                )
            digest = hashlib.sha256(found).hexdigest()
        table.update(rank_table_path=table_path, rank_table_sha256=digest)
        record.update(table)
        record.pop("rank_table_steps")
    if not check_mode:
        record_job(job_root, record)
    return table


def open_gate(job_root: str, job: dict, start_at: float) -> None:
    """Open the gate at ``start_at``; the job becomes ``latest`` (it has started)."""
    files.write_gate(files.job_dir(job_root, job["job_id"]), start_at)
    files.write_latest(job_root, job["job_id"])


def stop_job(job_root: str, job: dict, grace: float, reason: str = "stop requested") -> dict:
    """Stop every local rank of ``job``: abort the gate, TERM then KILL each rank's process group.

    Waits for the runners too (they record the exit code and release the device locks).
    Returns ``{"stopped": [rank ids that were alive], "killed": [ranks that needed SIGKILL]}``.
    """
    directory = files.job_dir(job_root, job["job_id"])
    if files.read_abort(directory) is None:
        files.record_abort(directory, reason)
    ranks = rank_states(job_root, job)
    alive = [r for r in ranks if r["state"] in ("staged", "running", "pending") or group_alive(r["pid"])]
    # ranks this same stop already ended through the job's group (stop.yml reached another server first): stopped by it too
    through_group = [r["rank_id"] for r in ranks if r not in alive and r["state"] == "stopped" and reason in str(r.get("stopped_by") or "")]
    by_pgid = dict((int(r["pid"]), r["rank_id"]) for r in alive if r["pid"])
    result = kill_groups(list(by_pgid), grace)
    runners = [r["runner_pid"] for r in alive if r["runner_pid"]]
    for pid in wait_gone(runners, grace):
        try:
            os.kill(int(pid), signal.SIGTERM)
        except OSError:
            pass
    wait_gone(runners, 2.0)
    return {
        "stopped": sorted([r["rank_id"] for r in alive if r["state"] != "pending"] + through_group),
        "killed": sorted(by_pgid[g] for g in result["killed"]),
    }


def controller_time(rank: dict, key: str) -> float | None:
    """``rank[key]`` - a time its runner recorded in its server's clock (``started``, ``ended``) - in the controller's
    clock: less the server's ``clock_offset`` recorded beside it (none recorded: as it is). None when there is no time.

    The one way to compare times across servers (a job's start spread, its duration, which rank failed first), or to
    show one beside the controller's: a server whose clock is 20 s ahead would otherwise start its ranks "20 s late".
    """
    value, offset = rank.get(key), rank.get("clock_offset")
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return None
    if not isinstance(offset, (int, float)) or isinstance(offset, bool):
        offset = 0.0
    return float(value) - float(offset)


def fail_fast(source: object) -> bool:
    """Whether a rank whose command ended badly stops the job's other ranks (fail-fast), as ``source`` says: a runner's or
    supervisor's parameters (``fail_fast``: the launch role's ``ascend_launch_fail_fast``), or the job's record
    (``job.json`` keeps what the launch was given). True unless it says false (a job recorded before the option was).

    The one switch, read by the rank runner (:meth:`_job_runner.RankRunner.rank_failed`, the node runner's too), the
    poll (:func:`poll`) and the job's coordinator (``group.json``'s ``fail_fast``, which the watch and the report read).
    It covers a rank whose command ran and ended badly: a non-zero exit, a death by a signal nobody of ours sent, stopped
    by its runner for a stall or for running too long. With it (the default) that rank's runner writes the job's abort
    line and stops its siblings, and the job's group stops every other server; without it the failure stays that rank's
    (its ``state.json``), every other rank runs to its own end, and the report says so. A rank that could not start
    (device refused, gate timed out, its rank table changed), ranks lost with their runner or their server, and a stop
    (stop.yml, a Ctrl-C, a signal to a runner) stop the job either way: it cannot go on as it was launched.
    """
    value = source.get("fail_fast") if isinstance(source, dict) else None
    return FAIL_FAST if value is None else bool(value)


def poll(
    job_root: str,
    job: dict,
    grace: float,
    act: bool = True,
    fail_fast_given: bool | None = None,
    tail_lines: int = 0,
    tail_failed: int = 20,
    check_mode: bool = False,
) -> dict:
    """``training_job state=poll`` (``state=status``: ``act`` false): every local rank, the first failed one, and with
    fail-fast (``fail_fast_given``, else the job's record: :func:`fail_fast`) the other local ranks stopped once one has
    failed (only with ``act``, not in ``check_mode``)."""
    ranks = rank_states(job_root, job, tail_lines, tail_failed)
    failed = first_failure(ranks)
    stops = fail_fast(job) if fail_fast_given is None else fail_fast_given
    stopped: list = []
    if failed and stops and act and not check_mode:
        stopped = stop_job(job_root, job, grace, files.failed_line(failed["rank_id"], failed["rc"], failed["error"]))["stopped"]
        ranks = rank_states(job_root, job, tail_lines, tail_failed)
    abort = files.read_abort(files.job_dir(job_root, job["job_id"]))
    return dict(changed=bool(stopped), job_id=job["job_id"], ranks=ranks, failed_rank=failed, stopped=stopped, abort=abort, fail_fast=stops)


def first_failure(ranks: list) -> dict | None:
    """The failed rank that ended first (by its recorded end time), or None."""
    failed = [r for r in ranks if r["state"] == "failed"]
    if not failed:
        return None
    return sorted(failed, key=lambda r: (r["ended"] or float("inf"), r["rank_id"]))[0]


def stop_jobs(job_root: str, job_id: str, grace: float, reason: str, check_mode: bool = False) -> dict:
    """``training_job state=stop``: stop every local rank of the job ``job_id`` names (``all``: every recorded job with
    live ranks, as ``jobs``); nothing is stopped in ``check_mode``. The module's result."""
    # latest: the newest started job, or a newer one still staged at its gate (also one this stop, passed on by the job's
    # group from another server, has just released)
    resolved = resolve_job_id(job_root, job_id, stopped_by=reason)
    if resolved is None:
        return dict(
            changed=False,
            job_id=None,
            ranks=[],
            stopped=[],
            killed=[],
            msg="no training job recorded under %s: nothing to stop" % job_root,
        )
    ids = files.list_jobs(job_root) if job_id == "all" else [resolved]
    results = []
    for each in ids:
        job = load_job(job_root, each)
        before = rank_states(job_root, job)
        if not any(r["state"] in ("staged", "running", "pending") for r in before):
            if job_id == "all":
                continue
        outcome: dict = {"stopped": [], "killed": []}
        if not check_mode:
            outcome = stop_job(job_root, job, grace, reason)
        results.append(dict(job_id=job["job_id"], ranks=rank_states(job_root, job), **outcome))
    changed = any(r["stopped"] for r in results)
    if job_id == "all":
        return dict(changed=changed, jobs=results)
    return dict(changed=changed, **results[0])
