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

Runs on target hosts: Python 3.8+, stdlib only.
"""

from __future__ import annotations

import os
import signal
import time
import traceback
from typing import Callable

from ansible_collections.ascend.cluster.plugins.module_utils import _job_files as files
from ansible_collections.ascend.cluster.plugins.module_utils._job_launcher import PER_DEVICE
from ansible_collections.ascend.cluster.plugins.module_utils._job_node_runner import NodeRunner
from ansible_collections.ascend.cluster.plugins.module_utils._job_runner import RankRunner

RANK_KEYS = ("rank_id", "device_id", "local_rank", "local_count")
FORWARDED = (signal.SIGTERM, signal.SIGHUP)  # what the supervisor passes on to its runners


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
    """Starts and reaps the runners of one server's ranks (``params``: the ``training_ranks`` module's)."""

    def __init__(self, params: dict) -> None:
        self.params = params
        self.children: dict = {}  # pid -> rank_id
        self.stop_signal: int | None = None  # the signal _forward passed on, once one came

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
                        code = _run_child(params)
                    finally:
                        os._exit(code)
                self.children[pid] = params["rank_id"]
                if self.stop_signal is not None:
                    os.kill(pid, self.stop_signal)
            finally:
                signal.pthread_sigmask(signal.SIG_UNBLOCK, FORWARDED)

    def wait(self) -> list:
        """Reap every runner; every rank's final ``state.json`` in the given order."""
        while self.children:
            try:
                pid, _status = os.waitpid(-1, 0)
            except ChildProcessError:
                break
            except InterruptedError:  # pragma: no cover - PEP 475 retries, kept for clarity
                continue
            self.children.pop(pid, None)
        return [self.final_state(rank) for rank in self.params["ranks"]]

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
        self.start()
        return self.wait()


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
