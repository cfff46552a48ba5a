# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""One rank's life: stage, wait at the gate, run the training command, record how it ended.

The runner is the body of the ``training_rank`` module, started per device by an async task.
It owns the device's lock from staging to exit (the lock's file descriptor is also inherited by
the training process, so the device stays booked while either of them is alive) and writes
every change of phase to ``<run_dir>/device_<rank>/state.json``:

``staged`` (waiting at the gate) -> ``running`` -> ``exited`` (with ``rc``; a failure stops the job unless
``fail_fast`` is off: :meth:`RankRunner.rank_failed`), or ``refused``
(device locked by another job; or, just before the start, the rank table is not the one the launch wrote - its sha256
differs from the one recorded with the job -, which also stops the job), ``aborted`` (stopped before the gate opened), ``gate_timeout``
(the controller never opened the gate). Its times (``staged_at``, ``started``, ``ended``) are this server's clock;
``clock_offset`` beside them is that clock's offset against the controller's, as the pre-flight measured it.

While the rank runs, the runner samples its ``train.log`` about once a second (``_job.progress``): a rank
that makes no progress for ``stall_timeout`` seconds is stopped (its Python stacks taken first, with
py-spy when it is on PATH) and fails the job as a rank that exits non-zero does (``stalled`` in its state).

The training command runs in its own session (process group id = its pid), so stop and fail-fast
signal the whole tree with ``killpg``. While it runs, the runner records the pids of its process tree
(``pids`` in ``state.json``: a wrapper's children - ``bash train.sh`` runs ``python``, which writes the
plog - as well as the command itself), so that ``training_job state=diagnose`` finds every process's
plog (``plog-<pid>_*.log``). It is never passed through a shell: the argv list is
exec'd directly, or through ``bash -c 'source "$1"; shift; exec "$@"'`` when the CANN
``set_env.sh`` exists, which hands every argument over unchanged.

Runs on target hosts: Python 3.8+, stdlib only.
"""

from __future__ import annotations

import errno
import fcntl
import os
import signal
import subprocess
import time

from ansible_collections.ascend.cluster.plugins.module_utils._job import files, progress
from ansible_collections.ascend.cluster.plugins.module_utils._job.control import TIMED_OUT, fail_fast, tail
from ansible_collections.ascend.cluster.plugins.module_utils._job.env import rank_env
from ansible_collections.ascend.cluster.plugins.module_utils._job.procs import kill_group, kill_groups, signal_death, signal_name, tree_pids

GATE_POLL_S = 0.02
SUPERVISOR_DIED = "the supervisor of job %s on this server (pid %d) died (killed -9?); its ranks were stopped: none runs unsupervised"
SOURCE_THEN_EXEC = 'source "$1"; shift; exec "$@"'
# The rank's process tree is looked at every PIDS_FAST_POLL_S for its first PIDS_FAST_S seconds (a rank that fails at
# HCCL's start lives about a second), then every progress.SAMPLE_S; at most MAX_PIDS pids are kept in its state.
PIDS_FAST_S = 5.0
PIDS_FAST_POLL_S = 0.05
MAX_PIDS = 256


class DeviceBusy(Exception):
    """The device's lock is held by another rank (of this or another job)."""


def take_device_lock(lock_dir: str, device_id: int, holder: str) -> int:
    """Lock ``device_<id>.lock`` (non-blocking) and write ``holder`` into it; returns the fd.

    Raises :class:`DeviceBusy` naming the current holder when the lock is taken.
    """
    # A server's runners stage at the same instant (one supervisor forks them all): the first
    # to get here makes the directory, the others must find it made, not fail.
    os.makedirs(lock_dir, 0o755, exist_ok=True)
    path = files.lock_path(lock_dir, device_id)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        if exc.errno not in (errno.EAGAIN, errno.EACCES):
            raise
        current = os.read(fd, 4096).decode("utf-8", "replace").strip()
        os.close(fd)
        raise DeviceBusy("device %d is locked (%s) by %s" % (int(device_id), path, current or "another process")) from exc
    os.ftruncate(fd, 0)
    os.write(fd, holder.encode("utf-8"))
    return fd


def command_argv(argv: list, set_env: str | None) -> list:
    """The argv to exec: ``argv`` itself, or wrapped so that ``set_env`` is sourced first."""
    if set_env and os.path.isfile(set_env):
        return ["bash", "-c", SOURCE_THEN_EXEC, "ascend-set-env", set_env] + list(argv)
    return list(argv)


def clock_offset(p: dict) -> float:
    """This server's clock offset against the controller, as the pre-flight measured it (the job's ``group``; 0 unknown).

    Recorded in every ``state.json`` beside the times the runner writes in this server's clock (``started``, ``ended``),
    so that they can be read in the controller's: ``_job.control.controller_time``.
    """
    return float((p.get("group") or {}).get("clock_offset") or 0.0)


def expected_table_digest(p: dict, job_dir: str) -> str | None:
    """The sha256 the launch recorded for the rank table the rank reads (``rank_table_path``): the runner's own
    ``rank_table_sha256``, else the job record's when it names that file; None when the launch recorded none (a table the
    caller wrote itself: nothing to check)."""
    if p.get("rank_table_sha256"):
        return str(p["rank_table_sha256"])
    job = files.read_json(os.path.join(job_dir, files.JOB_FILE))
    if isinstance(job, dict) and job.get("rank_table_sha256") and job.get("rank_table_path") == p["rank_table_path"]:
        return str(job["rank_table_sha256"])
    return None


def table_problem(path: str, expected: str | None) -> str | None:
    """Why the rank table at ``path`` is not the one the launch wrote (sha256 ``expected``); None when it is (or when
    nothing is expected)."""
    if not expected:
        return None
    try:
        found = files.sha256_file(path)
    except OSError as exc:
        return "the rank table %s cannot be read (%s); the launch wrote sha256 %s there: launch the job again" % (path, exc, expected)
    if found == expected:
        return None
    return (
        "the rank table %s was changed after the launch wrote it: its sha256 is %s, the launch wrote %s; the rank was not "
        "started on it. Find what rewrote the job's table, then launch the job again" % (path, found, expected)
    )


def own_fault(timed_out: bool, stalled: dict | None) -> str | None:
    """Why the runner stopped its rank itself, as the rank's abort reason: it ran too long, or it stalled."""
    if timed_out:
        return TIMED_OUT
    return progress.why(stalled) if stalled else None


class RankRunner:
    """Runs one rank; ``p`` is the ``training_rank`` module's parameters."""

    def __init__(self, p: dict) -> None:
        self.p = p
        self.dir = files.rank_dir(p["run_dir"], p["rank_id"])
        self.job_dir = files.job_dir(p["job_root"], p["job_id"])
        self.state: dict = {
            "job_id": p["job_id"],
            "rank_id": p["rank_id"],
            "device_id": p["device_id"],
            "runner_pid": os.getpid(),
            "log": os.path.join(self.dir, files.TRAIN_LOG),
            "clock_offset": clock_offset(p),
        }
        self.child: subprocess.Popen | None = None
        # A runner the supervisor of a job's group forked: it stops its rank when that supervisor dies (killed -9), so
        # that nothing runs on unsupervised on a server whose member of the group is gone.
        self.supervisor = os.getppid() if p.get("group") else None
        self.stop_requested = False
        self.stop_signal: int | None = None

    def save(self, **changes) -> dict:
        self.state.update(changes)
        files.write_json(os.path.join(self.dir, files.STATE_FILE), self.state)
        return self.state

    def _on_signal(self, signum: int, _frame: object) -> None:
        self.stop_requested = True
        self.stop_signal = signum
        if self.child is not None and self.child.poll() is None:
            kill_group(self.child.pid, signal.SIGTERM)

    def environment(self) -> dict:
        p = self.p
        env = dict(os.environ)
        rank = dict(
            (k, p[k])
            for k in (
                "rank_id",
                "device_id",
                "rank_size",
                "local_rank",
                "local_count",
                "rank_table_path",
                "master_addr",
                "master_port",
                "host_ip",
            )
        )
        # torchrun's per-worker values (the pytorch preset): this server's place among the job's servers, the job's id,
        # where torch's @record writes the rank's exception (_job_env, _torch_error)
        rank.update(
            group_rank=p.get("node_rank") or 0,
            group_world_size=p.get("nnodes") or 1,
            run_id=p["job_id"],
            error_file=os.path.join(self.dir, files.ERROR_FILE),
        )
        env.update(rank_env(p["framework"], rank, p["connect_timeout"], p["env"], p.get("tune_bank_path"), p.get("aoe_mode")))
        return env

    def stage(self) -> int:
        """Working directory, env.log, device lock, state ``staged``; returns the lock fd."""
        if self.p["umask"] is not None:
            os.umask(int(self.p["umask"], 8))
        os.makedirs(self.dir, exist_ok=True)  # its parent, the run dir, is made by whichever sibling comes first
        self.save(phase=files.STAGING, staged_at=time.time())
        holder = "job %s rank %d pid %d" % (self.p["job_id"], self.p["rank_id"], os.getpid())
        lock_fd = take_device_lock(self.p["lock_dir"], self.p["device_id"], holder)
        env = self.environment()
        with open(os.path.join(self.dir, files.ENV_LOG), "w") as handle:
            handle.write("".join("%s=%s\n" % (k, env[k]) for k in sorted(env)))
        self.save(phase=files.STAGED)
        return lock_fd

    def wait_gate(self) -> float | None:
        """Block until the gate opens; the start time, or None if aborted / timed out (state saved)."""
        gate = os.path.join(self.job_dir, files.GATE_FILE)
        deadline = time.time() + self.p["gate_timeout"]
        while True:
            if self.aborted():
                self.save(phase=files.ABORTED, ended=time.time(), stopped_by=self.stop_reason())
                return None
            opened = files.read_json(gate)
            if isinstance(opened, dict) and "start_at" in opened:
                return float(opened["start_at"])
            if time.time() > deadline:
                self.save(phase=files.GATE_TIMEOUT, ended=time.time(), error="the gate was not opened within %ds" % self.p["gate_timeout"])
                return None
            time.sleep(GATE_POLL_S)

    def aborted(self) -> bool:
        return self.stop_requested or os.path.exists(os.path.join(self.job_dir, files.ABORT_FILE)) or self.orphaned()

    def orphaned(self) -> bool:
        """The supervisor that forked this runner has died: record why (once, first) and say so."""
        if self.supervisor is None or os.getppid() == self.supervisor:
            return False
        if files.read_abort(self.job_dir) is None:
            files.record_abort(self.job_dir, SUPERVISOR_DIED % (self.p["job_id"], self.supervisor))
        return True

    def stop_reason(self) -> str | None:
        """Who is stopping the job, as known now: the abort file's first reason, else a signal to this runner."""
        reason = files.read_abort(self.job_dir)
        if reason is not None:
            return reason or "stop requested"
        if self.stop_signal is not None:
            return "the runner of rank %d was sent %s" % (self.p["rank_id"], signal_name(self.stop_signal))
        return None

    def start(self, start_at: float, lock_fd: int) -> None:
        if self.wait_for_gate(start_at) and self.table_intact():
            self.spawn(command_argv(self.p["argv"], self.p["set_env"]), files.TRAIN_LOG, start_at, (lock_fd,))

    def wait_for_gate(self, start_at: float) -> bool:
        """Sleep until ``start_at``; False (and the abort recorded) when the job was stopped meanwhile."""
        while True:
            if self.aborted():
                self.save(phase=files.ABORTED, ended=time.time(), stopped_by=self.stop_reason())
                return False
            delay = start_at - time.time()
            if delay <= 0:
                return True
            time.sleep(min(delay, GATE_POLL_S))

    def table_intact(self) -> bool:
        """Just before the rank starts: the rank table it reads is the one the launch wrote (its sha256). When it is not,
        the rank is refused (never started), naming the file and both digests, and the job is stopped as for any rank
        that could not start (its abort line, then the siblings here; the job's group stops the other servers)."""
        problem = table_problem(self.p["rank_table_path"], expected_table_digest(self.p, self.job_dir))
        if problem is None:
            return True
        self.save(phase=files.REFUSED, ended=time.time(), error=problem, stopped_by=None)
        self.stop_siblings(files.unstarted_line(self.p["rank_id"], problem))
        return False

    def spawn(self, argv: list, log_name: str, start_at: float, pass_fds: tuple, header: bytes = b"") -> None:
        """Start ``argv`` in its own session, logging to ``log_name`` in the run directory; record it running."""
        log = open(os.path.join(self.dir, log_name), "ab")
        if header:
            log.write(header)
            log.flush()
        started = time.time()
        try:
            # Popen, not module.run_command: the command runs detached, for hours, logging to its file.
            self.child = subprocess.Popen(  # pylint: disable=ansible-bad-function
                argv,
                cwd=self.dir,
                env=self.environment(),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                pass_fds=pass_fds,
            )
        except OSError as exc:
            log.write(("cannot start %r: %s\n" % (argv, exc)).encode("utf-8"))
            log.close()
            self.start_failed(started, str(exc))
            return
        log.close()
        self.save(phase=files.RUNNING, started=started, gate_at=start_at, pid=self.child.pid, pgid=self.child.pid)
        if self.aborted():  # stopped while the command was being started
            kill_group(self.child.pid, signal.SIGTERM)

    def start_failed(self, started: float, error: str) -> None:
        """The command could not be started: it ended at once with 127, as a shell says."""
        self.save(phase=files.EXITED, started=started, ended=time.time(), rc=127, error=error, stopped_by=None)

    def wait(self) -> None:
        if self.child is None:
            return
        limit = self.state["started"] + self.p["max_runtime"]
        meter = self.progress_meter(os.path.join(self.dir, files.TRAIN_LOG))
        timed_out = False
        stalled = None
        orphaned = False
        while True:
            self.note_pids()
            try:
                sample = PIDS_FAST_POLL_S if time.time() - self.state["started"] < PIDS_FAST_S else progress.SAMPLE_S
                rc = self.child.wait(timeout=max(PIDS_FAST_POLL_S, min(sample, limit - time.time())))
                break
            except subprocess.TimeoutExpired:
                now = time.time()
                if timed_out or stalled or orphaned:
                    continue  # being stopped
                if self.orphaned():
                    orphaned = True
                    kill_group(self.child.pid, signal.SIGTERM, self.p["kill_grace"])
                    continue
                if now >= limit:
                    timed_out = True
                    kill_group(self.child.pid, signal.SIGTERM, self.p["kill_grace"])
                elif meter is not None:
                    silent = meter.sample(now)
                    if silent is not None and not self.aborted() and self.child.poll() is None:
                        stalled = self.stall(meter, silent, progress.group_pids(self.child.pid))
                        kill_group(self.child.pid, signal.SIGTERM, self.p["kill_grace"])
        # Whether we stopped it is decided now, from what was recorded before it died: a stop
        # writes its reason before it signals, so a death by a signal with no reason yet was not ours.
        stopped_by = self.stop_reason()
        ended = dict(phase=files.EXITED, rc=rc, ended=time.time(), timed_out=timed_out, stopped_by=stopped_by)
        if stalled:
            ended.update(stalled=stalled, error=progress.why(stalled))
        self.save(**ended)
        if rc == 0 and not timed_out and not stalled:
            return
        if stopped_by is None:
            why = own_fault(timed_out, stalled) or signal_death(rc)
            self.rank_failed(files.failed_line(self.p["rank_id"], rc, why))
        elif files.read_abort(self.job_dir) is None:  # this runner was signalled: say so, stop the rest
            self.stop_siblings(stopped_by)

    def note_pids(self) -> None:
        """Add the processes of the rank's tree not seen yet to its state's ``pids`` (the plogs' names carry them)."""
        if self.child is None:
            return
        seen = list(self.state.get("pids") or [])
        new = [pid for pid in tree_pids(self.child.pid) if pid not in seen]
        if new and len(seen) < MAX_PIDS:
            self.save(pids=(seen + new)[:MAX_PIDS])

    def progress_meter(self, log: str) -> progress.ProgressMeter | None:
        """A meter of the running rank's ``log`` when stall detection is on (``stall_timeout`` > 0), else None."""
        timeout = float(self.p.get("stall_timeout") or 0)
        return progress.ProgressMeter(log, timeout, self.p.get("progress_regex"), self.state["started"]) if timeout > 0 else None

    def stall(self, meter: progress.ProgressMeter, silent: float, pids: list) -> dict:
        """What a stalled rank shows before it is stopped (its log's last line; the stacks of its Python ``pids``,
        with py-spy), as its ``stalled`` record; the log gets the reason and the stacks too (its tail is what the
        job's failure shows)."""
        record = meter.stalled(silent, (tail(meter.path, 1) or [None])[-1])
        record["stack"] = progress.py_spy_stacks(pids)
        note = ["ascend.cluster: %s; stopping the rank" % progress.why(record)] + record["stack"]
        try:
            with open(meter.path, "a") as log:
                log.write("".join(line + "\n" for line in note))
        except OSError:
            pass
        return record

    def rank_failed(self, line: str, siblings: bool = True) -> None:
        """This rank's command ended badly (``line``: its abort line, :func:`_job.files.failed_line`). With fail-fast
        (``_job.control.fail_fast``: the runner's ``fail_fast``, true by default) the job stops: the abort line recorded,
        then (``siblings``) the job's other ranks on this server stopped; the job's group stops every other server. Without
        it the failure stays this rank's own (its state says how it ended) and every other rank runs to its end."""
        if not fail_fast(self.p):
            return
        if siblings:
            self.stop_siblings(line)
        else:
            files.record_abort(self.job_dir, line)

    def stop_siblings(self, reason: str) -> None:
        """Stop the job for ``reason``: recorded as its abort line, then the job's other ranks on this server stopped right
        away (the job's group, which the supervisor tells, stops the other servers).
        """
        files.record_abort(self.job_dir, reason)
        job = files.read_json(os.path.join(self.job_dir, files.JOB_FILE)) or {}
        groups = []
        for rank in job.get("ranks", []):
            if rank["rank_id"] == self.p["rank_id"]:
                continue
            state = files.read_json(os.path.join(files.rank_dir(self.p["run_dir"], rank["rank_id"]), files.STATE_FILE))
            if isinstance(state, dict) and state.get("pgid"):
                groups.append(state["pgid"])
        kill_groups(groups, self.p["kill_grace"])

    def release(self, locks) -> None:
        """Close what :meth:`stage` returned (this rank's lock; a node runner's override closes all of its)."""
        os.close(locks)

    def run(self) -> dict:
        signal.signal(signal.SIGTERM, self._on_signal)
        signal.signal(signal.SIGHUP, self._on_signal)
        # a runner forked by the supervisor starts with them blocked (a stop held during the fork arrives now)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, (signal.SIGTERM, signal.SIGHUP))
        try:
            locks = self.stage()
        except DeviceBusy as exc:
            return self.save(phase=files.REFUSED, error=str(exc), ended=time.time())
        try:
            start_at = self.wait_gate()
            if start_at is not None:
                self.start(start_at, locks)
                self.wait()
        finally:
            self.release(locks)
        return self.state
