# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""One server's ranks from one process: fork today's rank runner once per NPU, wait for them all.

The body of the ``training_ranks`` module, which the launch starts once per server with one async
task (instead of one async task per rank). The supervisor adds nothing to a rank's life: each
child is a plain :class:`RankRunner` - its own session, run directory, ``env.log``, device lock
and ``state.json``, exactly as when ``training_rank`` ran it - so gate, fail-fast, ``status``,
``stop`` and ``kill_stale`` (which act on the runners' recorded pids and process groups) see
the same processes as before. The supervisor only starts them, forwards TERM/HUP to them, reaps
them and returns every rank's final state in one result.

In a launcher mode (``launcher`` ``torchrun`` / ``msrun``) it forks one :class:`NodeRunner` for all the
server's ranks instead (``_job_node_runner``), which writes the same per-rank files.

With ``group`` (the launch role's way) the supervisor is also this server's member of the job's group
(``_job_group``), and on the coordinator's server it first forks the coordinator as a daemon of its own. While its
runners live it then: opens the gate here when the group says so; passes the first line of the job's abort file on
to the group (a rank that failed here, ranks whose runner died, a stop from stop.yml or the controller); stops the
local ranks when the group says so or the abort file appears (TERM to each rank's process group, KILL after
``kill_grace``, never blocking its loop); sends its ranks' states with its heartbeats; and, once every runner has
ended, sends their final states and leaves.

Runs on target hosts: Python 3.8+, stdlib only.
"""

from __future__ import annotations

import os
import signal
import time
import traceback
from typing import Callable

from ansible_collections.ascend.cluster.plugins.module_utils import _job_control as control
from ansible_collections.ascend.cluster.plugins.module_utils import _job_files as files
from ansible_collections.ascend.cluster.plugins.module_utils import _job_group as group
from ansible_collections.ascend.cluster.plugins.module_utils._job_launcher import PER_DEVICE
from ansible_collections.ascend.cluster.plugins.module_utils._job_node_runner import NodeRunner
from ansible_collections.ascend.cluster.plugins.module_utils._job_procs import group_alive, kill_group
from ansible_collections.ascend.cluster.plugins.module_utils._job_runner import RankRunner

RANK_KEYS = ("rank_id", "device_id", "local_rank", "local_count")
FORWARDED = (signal.SIGTERM, signal.SIGHUP)  # what the supervisor passes on to its runners
TICK_S = 0.05  # the group loop: how long it waits for the coordinator's word between looks at the abort file
STATES_EVERY_S = 0.5  # how often the ranks' states are read for the group (sent with the heartbeat when changed)
TAIL_FAILED = 20  # log lines of a failed rank in the failure the group passes on
LOST_SETTLE_S = 0.2  # after a runner that ended without a record: time for its siblings' deaths to be reaped too


def rank_params(common: dict, rank: dict) -> dict:
    """The ``training_rank`` parameters of one rank: the server's ``common`` ones plus its ids."""
    params = dict(common)
    params.pop("ranks", None)
    for key in RANK_KEYS:
        params[key] = int(rank[key])
    return params


def _run_child(params: dict) -> int:
    """Body of a forked child: become a rank runner (a node runner in a launcher mode) in its own session; the exit status."""
    os.setsid()  # as an async task's runner was: own session, untouched by signals to the supervisor's group
    for signum in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(signum, signal.SIG_DFL)
    # still blocked since the fork (Supervisor.start); the runner unblocks them once its own handlers are in place
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):  # never write into the module's (async wrapper's) stdout
        os.dup2(null, fd)
    os.close(null)
    runner = NodeRunner(params) if params.get("launcher", PER_DEVICE) != PER_DEVICE else RankRunner(params)
    try:
        state = runner.run()
    except Exception:  # recorded for status / the report, never raised into the module
        os.makedirs(runner.dir, exist_ok=True)
        runner.save(
            phase=files.EXITED, rc=-1, stopped_by=None, ended=time.time(), error="runner crashed: %s" % traceback.format_exc(limit=3)
        )
        return 2
    return 0 if state.get("phase") == files.EXITED and state.get("rc") == 0 else 1


class Supervisor:
    """Starts and reaps the runners of one server's ranks (``params``: the ``training_ranks`` module's).

    ``listener``: the group's listening socket, on the coordinator's server only (bound by the stage's call, so that a
    port already taken fails that call): the coordinator is forked with it before any runner.
    """

    def __init__(self, params: dict, listener=None) -> None:
        self.params = params
        self.listener = listener
        self.children: dict = {}  # pid -> rank_id
        self.stop_signal: int | None = None  # the signal _forward passed on, once one came
        self.job = {"job_id": params["job_id"], "run_dir": params["run_dir"], "ranks": params["ranks"]}
        self.member: group.Member | None = None
        self.reported = False  # the abort file's first line was passed on to the group (or came from it)
        self.stopping: list = []  # process groups TERMed by the group loop, KILLed at kill_at
        self.kill_at: float | None = None
        self.states: dict = {}  # rank id -> state last sent to the group
        self.next_states = 0.0

    @property
    def job_dir(self) -> str:
        return files.job_dir(self.params["job_root"], self.params["job_id"])

    def _forward(self, signum: int, _frame: object) -> None:
        self.stop_signal = signum
        for pid in list(self.children):
            try:
                os.kill(pid, signum)
            except OSError:
                pass

    def start(self) -> None:
        """Fork one runner per rank; each stages at once and waits at the gate on its own."""
        # Forward from before the first fork: a stop that arrives mid-way reaches the runners
        # already forked instead of killing the supervisor and orphaning them (children reset these).
        for signum in FORWARDED:
            signal.signal(signum, self._forward)
        if self.params.get("launcher", PER_DEVICE) == PER_DEVICE:
            runs = [rank_params(self.params, rank) for rank in self.params["ranks"]]
        else:  # one node runner for every rank of the server; it writes each rank's state.json
            runs = [dict(self.params, rank_id=self.params["ranks"][0]["rank_id"])]
        for params in runs:
            # A stop that arrives between a fork and the line that records the child must reach that child too
            # (else its runner waits at the gate until its time-out). Blocked here, it is handled once the child is
            # recorded; the child inherits the block, so it is held for the runner until its own handlers are in
            # place. (Where another thread of this process took the signal first, stop_signal says so.)
            signal.pthread_sigmask(signal.SIG_BLOCK, FORWARDED)
            try:
                pid = os.fork()
                if pid == 0:  # pragma: no cover - the child never returns (its exit status is checked)
                    code = 2
                    try:
                        if self.listener is not None:
                            self.listener.close()
                        code = _run_child(params)
                    finally:
                        os._exit(code)
                self.children[pid] = params["rank_id"]
                if self.stop_signal is not None:
                    os.kill(pid, self.stop_signal)
            finally:
                signal.pthread_sigmask(signal.SIG_UNBLOCK, FORWARDED)

    def start_coordinator(self) -> None:
        """Fork the job's coordinator as a daemon of its own session (nobody's child: it outlives this process if
        this one is killed, and then finds this server's member silent), then close this process's copy of its socket.
        Its stderr goes to ``coordinator.log`` in the job's directory (``_job_files.open_coordinator_log``)."""
        listener, self.listener = self.listener, None
        if listener is None:
            return
        cfg = dict(
            self.params["group"],
            job_id=self.params["job_id"],
            join_timeout=self.params["gate_timeout"],
            fail_fast=control.fail_fast(self.params),
        )
        pid = os.fork()
        if pid == 0:  # pragma: no cover - runs in the forked processes, which never return
            code = 1
            try:
                os.setsid()
                if os.fork() != 0:
                    code = 0
                else:
                    for signum in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
                        signal.signal(signum, signal.SIG_DFL)
                    null = os.open(os.devnull, os.O_RDWR)
                    for fd in (0, 1):
                        os.dup2(null, fd)
                    os.close(null)
                    log = files.open_coordinator_log(self.job_dir)  # its stderr: a crash's traceback is kept
                    os.dup2(log, 2)
                    os.close(log)
                    try:
                        group.Coordinator(cfg, self.job_dir, listener).run()  # a crash is in group.json too
                        code = 0
                    except Exception:  # pylint: disable=broad-except
                        os.write(2, traceback.format_exc().encode("utf-8", "replace"))  # fd 2 itself: the log
            finally:
                os._exit(code)
        listener.close()
        os.waitpid(pid, 0)

    def wait(self) -> list:
        """Reap every runner; every rank's final ``state.json`` in the given order."""
        if self.params.get("group"):
            return self.wait_in_group()
        while self.children:
            try:
                pid, _status = os.waitpid(-1, 0)
            except ChildProcessError:
                break
            except InterruptedError:  # pragma: no cover - PEP 475 retries, kept for clarity
                continue
            self.children.pop(pid, None)
        return [self.final_state(rank) for rank in self.params["ranks"]]

    # -- the job's group

    def wait_in_group(self) -> list:
        """The group loop: reap runners without blocking, and between looks wait for the coordinator's word."""
        cfg = dict(self.params["group"], job_id=self.params["job_id"], join_timeout=self.params["gate_timeout"])
        self.member = group.Member(cfg, self.job_dir, self.params["ranks"], self.open_gate, self.stop_here)
        try:
            while self.children:
                self.reap()
                self.member.poll(TICK_S)
                self.look_at_abort()
                self.send_states()
                self.kill_late()
            self.member.poll(0)
            self.look_at_abort()
            final = control.rank_states(self.params["job_root"], self.job, tail_lines=1, tail_failed=TAIL_FAILED)
            self.member.finish(final)
        finally:
            self.member.close()
        return [self.final_state(rank) for rank in self.params["ranks"]]

    def reap(self) -> None:
        """Reap the runners that ended; ranks whose runner ended without recording an end are lost: the job stops.

        A host going down, or an operator's ``kill -9`` of several runners, takes them one after another within
        milliseconds: after a first runner that ended without a record, the others are given :data:`LOST_SETTLE_S` to
        be reaped too, so that the job's failure names every lost rank of this server, not the first one alone.
        """
        ended = self._reap_now()
        if ended and any(self._unrecorded(r) for r in ended) and self.children:
            time.sleep(LOST_SETTLE_S)
            ended += self._reap_now()
        if ended:
            self.check_ended(ended)

    def _reap_now(self) -> list:
        """The ranks of every runner that has ended by now (reaped without blocking)."""
        ended: list = []
        while self.children:
            try:
                pid, _status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                self.children.clear()
                break
            if pid == 0:
                break
            first = self.children.pop(pid, None)
            if first is None:
                continue
            if self.params.get("launcher", PER_DEVICE) != PER_DEVICE:
                ended.extend(self.params["ranks"])
            else:
                ended.extend(r for r in self.params["ranks"] if r["rank_id"] == first)
        return ended

    def _unrecorded(self, rank: dict) -> bool:
        state = files.read_json(os.path.join(files.rank_dir(self.params["run_dir"], rank["rank_id"]), files.STATE_FILE))
        return not isinstance(state, dict) or state.get("phase") not in files.FINAL_PHASES

    def check_ended(self, ranks: list) -> None:
        """The runner of ``ranks`` has ended: a rank it left in no final phase is lost; one refused or timed out at the gate
        never started. Either stops the job (unless it is being stopped already)."""
        lost, unstarted = [], []
        for rank in ranks:
            state = files.read_json(os.path.join(files.rank_dir(self.params["run_dir"], rank["rank_id"]), files.STATE_FILE))
            phase = state.get("phase") if isinstance(state, dict) else None
            if phase not in files.FINAL_PHASES:
                lost.append((rank, state if isinstance(state, dict) else {}))
            elif phase in (files.REFUSED, files.GATE_TIMEOUT):
                unstarted.append((rank, state))
        if files.read_abort(self.job_dir) is not None or not (lost or unstarted):
            return
        if lost:
            ids = [int(r["rank_id"]) for r, _s in lost]
            alive = [s.get("pgid") for _r, s in lost if s.get("phase") == files.RUNNING and group_alive(s.get("pgid"))]
            why = control.RUNNER_DIED % alive[0] if alive else control.VANISHED
            line = "%s lost: %s" % (_rank_words(ids), why)
            self.report(line, {"rank_id": -1, "lost": ids, "since": None, "error": why})
        else:
            rank, state = unstarted[0]
            line = files.unstarted_line(rank["rank_id"], state.get("error") or state.get("phase"))
            self.report(line, self.failure_of(line))
        files.record_abort(self.job_dir, line)
        self.stop_here(None)

    def report(self, reason: str, failure: dict | None) -> None:
        """Pass this server's stop on to the group, once."""
        if not self.reported and self.member is not None:
            self.reported = True
            self.member.abort(reason, failure)

    def look_at_abort(self) -> None:
        """The abort file's first line, once it appears: passed on to the group (with the failed rank's details when a
        rank of this server failed), and every local rank stopped (the runners stop their siblings themselves; a stop
        written here by the controller or stop.yml may have stopped nothing yet)."""
        if self.reported and self.kill_at is not None:
            return
        reason = files.read_abort(self.job_dir)
        if reason is None:
            return
        if not self.reported:
            self.report(reason or "stop requested", self.failure_of(reason))
        if self.kill_at is None:
            self.stop_here(None)

    def failure_of(self, reason: str) -> dict | None:
        """The failure record of a local rank the abort line names (``rank N failed (rc=X)``), read from its state."""
        found = files.parse_abort_line(reason)
        rank = next((r for r in self.params["ranks"] if found["rank_id"] is not None and int(r["rank_id"]) == found["rank_id"]), None)
        if rank is None:
            return None
        single = dict(self.job, ranks=[rank])
        state = control.rank_states(self.params["job_root"], single, tail_lines=0, tail_failed=TAIL_FAILED)[0]
        return {
            "rank_id": found["rank_id"],
            "device_id": int(rank["device_id"]),
            "rc": found["rc"],
            "error": state.get("error") or found["why"],
            "log": state.get("log"),
            "tail": state.get("tail") or [],
            "ended": state.get("ended"),
        }

    def open_gate(self, start_at: float) -> None:
        """The group opened the gate: every runner here starts its rank at ``start_at`` (this server's clock)."""
        try:
            control.open_gate(self.params["job_root"], self.job, start_at)
        except OSError as exc:
            files.record_abort(self.job_dir, "cannot open the gate on this server: %s" % exc)

    def stop_here(self, reason: str | None) -> None:
        """Stop every local rank: the reason recorded first (runners at the gate give up, a dying rank is ``stopped``),
        then TERM to each live rank's process group; KILL follows after ``kill_grace`` (:meth:`kill_late`)."""
        if reason is not None and files.read_abort(self.job_dir) is None:
            files.record_abort(self.job_dir, reason)
            self.reported = True  # it came from the group: nothing to pass on
        groups = []
        for rank in self.params["ranks"]:
            state = files.read_json(os.path.join(files.rank_dir(self.params["run_dir"], rank["rank_id"]), files.STATE_FILE))
            if isinstance(state, dict) and state.get("pgid") and state.get("phase") == files.RUNNING:
                groups.append(int(state["pgid"]))
        for pgid in groups:
            kill_group(pgid, signal.SIGTERM)
        self.stopping = sorted(set(self.stopping) | set(groups))
        if self.kill_at is None:
            self.kill_at = time.time() + float(self.params.get("kill_grace") or 3.0)

    def kill_late(self) -> None:
        """KILL what the stop's TERM left alive once ``kill_grace`` has passed (and the ranks started since: TERM first)."""
        if self.kill_at is None:
            return
        if time.time() < self.kill_at:
            return
        for pgid in self.stopping:
            if group_alive(pgid):
                kill_group(pgid, signal.SIGKILL)
        self.stopping = []
        self.kill_at = time.time() + float(self.params.get("kill_grace") or 3.0)
        self.stop_here(None)  # a rank that started while stopping (the gate opened just before) gets its TERM now

    def send_states(self) -> None:
        """The ranks' states that changed, and rank 0's last log line, for the group: every :data:`TICK_S` until the gate
        has opened (the coordinator opens it once every rank of every server is staged), then every
        :data:`STATES_EVERY_S`. A rank still taking its lock or writing its env.log is ``staging``, not yet staged."""
        now = time.time()
        if self.member is None or now < self.next_states:
            return
        self.next_states = now + (STATES_EVERY_S if self.member.gate_seen else TICK_S)
        ranks = control.rank_states(self.params["job_root"], self.job)
        current = dict((r["rank_id"], files.STAGING if r["phase"] == files.STAGING else r["state"]) for r in ranks)
        changed = dict((rank, state) for rank, state in current.items() if self.states.get(rank) != state)
        if changed:
            self.states.update(changed)
            self.member.states(changed)
        if any(int(r["rank_id"]) == 0 for r in self.params["ranks"]):
            last = control.tail(os.path.join(files.rank_dir(self.params["run_dir"], 0), files.TRAIN_LOG), 1)
            if last:
                self.member.progress_line(last[-1])

    def final_state(self, rank: dict) -> dict:
        path = os.path.join(files.rank_dir(self.params["run_dir"], rank["rank_id"]), files.STATE_FILE)
        state = files.read_json(path)
        if not isinstance(state, dict):
            return {
                "job_id": self.params["job_id"],
                "rank_id": int(rank["rank_id"]),
                "device_id": int(rank["device_id"]),
                "phase": "lost",
                "error": "the rank's runner ended without writing %s" % path,
            }
        return state

    def run(self) -> list:
        self.start_coordinator()
        self.start()
        return self.wait()


def _rank_words(ids: list) -> str:
    """``rank 3`` or ``ranks 8, 9``: how an abort line names local ranks."""
    ids = sorted(ids)
    return "rank %d" % ids[0] if len(ids) == 1 else "ranks %s" % ", ".join(str(i) for i in ids)


def detach(work: Callable[[], dict], results_file: str) -> int:
    """Run ``work`` in a daemon of its own session and return at once with the daemon's pid.

    What Ansible's async wrapper did for the launch task, without its own transfer and process: ``results_file``
    holds ``{"started": 1, "finished": 0}`` before this returns and ``work``'s result once it has ended (written
    atomically; ``_job_results.read_runner_result`` reads either form). The daemon is forked twice (so it is
    nobody's child in the module's process tree), takes a session of its own (the login's hang-up never reaches
    it) and has /dev/null as stdin, stdout and stderr (the module's output, which the controller reads, is not
    held open by it).
    """
    files.write_json(results_file, {"started": 1, "finished": 0, "results_file": results_file})
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the forked processes, which never return
        code = 1
        try:
            os.close(read_end)
            os.setsid()
            if os.fork() != 0:
                code = 0
            else:
                null = os.open(os.devnull, os.O_RDWR)
                for fd in (0, 1, 2):
                    os.dup2(null, fd)
                os.close(null)
                os.write(write_end, b"%d" % os.getpid())
                os.close(write_end)
                try:
                    result = work()
                except Exception:
                    result = {"failed": True, "msg": "the supervisor crashed: %s" % traceback.format_exc(limit=3)}
                files.write_json(results_file, result)
                code = 0
        finally:
            os._exit(code)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        daemon = pipe.read()
    os.waitpid(pid, 0)
    return int(daemon) if daemon else 0


def summary(states: list) -> tuple:
    """``(ok, message)`` over every rank's final state, one clause per rank that did not exit 0."""
    bad = [
        "rank %s: %s" % (s.get("rank_id"), s.get("error") or "%s rc=%s" % (s.get("phase"), s.get("rc")))
        for s in states
        if s.get("phase") != files.EXITED or s.get("rc") != 0
    ]
    if bad:
        return False, "%d of %d ranks did not exit 0: %s" % (len(bad), len(states), "; ".join(bad))
    return True, "%d ranks exited 0" % len(states)
