# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action training_watch: watch one server's ranks until the job ends; fail fast cluster-wide.

Runs on the controller, one instance per server (the play's forks run them side by side).
Every ``full_poll_interval`` it calls ``ascend.cluster.training_job state=poll`` on the server
(which reads every local rank's state file and, when one has failed, stops the others there);
every ``poll_interval`` in between it only probes, with one cheap shell command
(``_job_files.probe_command``), for the job's abort file that a failing rank's runner writes at
once and for ranks that have ended (then polls fully right away). The probes run in one shell session on
the server for the whole watch (``plugin_utils/_shell_session``: ``ssh ... /bin/sh`` over the connection Ansible
holds, or a local shell), not one ``ssh`` process each; where no session applies (another connection type,
``become``), each probe is one command over the connection. What to do about what it saw
is decided by ``plugin_utils/_watch.step``:

- a failed rank: write the job's controller-side marker ``<controller_dir>/<job_id>/failed``
  (first writer wins: that is the first failing rank) and fail naming it;
- every local rank ended but not every one finished (stopped by stop.yml, a signal to a runner,
  anything but their own exit 0): claim the marker too, and fail naming the abort file's reason;
- the marker written by another server's watcher (noticed within 50 ms between polls): TERM
  the local ranks' process groups with one shell command, then ``state=stop`` (KILL after the
  grace time, wait for the runners), and fail with the marker's message;
- every local rank done: succeed with the per-rank results;
- the server stops answering - two probes in a row (or a full poll and a probe) get no answer
  within ``probe_timeout``, fail to connect, or do not run through - or the probe finds ranks whose
  runner is gone before recording an exit: claim the marker naming the server and its lost ranks
  (the others follow and stop theirs). Calls to the server run in a daemon worker thread, so a
  hung connection costs at most its deadline; the task returns without waiting for it.

The watcher that holds rank 0 prints progress (ranks running / done / failed cluster-wide, read
from the per-server summaries every watcher leaves beside the marker, and rank 0's last log line).
"""

from __future__ import annotations

import copy
import json
import os
import posixpath
import signal
import threading
import time
from functools import partial
from shlex import quote
from typing import Any

from ansible import context
from ansible.errors import AnsibleActionFail, AnsibleConnectionFailure, AnsibleError
from ansible.plugins.action import ActionBase
from ansible.utils.display import Display

from ansible_collections.ascend.cluster.plugins.action.training_results import collect
from ansible_collections.ascend.cluster.plugins.module_utils import _job_files as files
from ansible_collections.ascend.cluster.plugins.module_utils import _options as options
from ansible_collections.ascend.cluster.plugins.plugin_utils import _interrupt as interrupt
from ansible_collections.ascend.cluster.plugins.plugin_utils import _shell_session as shell_session
from ansible_collections.ascend.cluster.plugins.plugin_utils import _watch as watch

display = Display()

MODULE = "ascend.cluster.training_job"
# The shared tool paths are accepted (module_defaults for group/ascend.cluster.ascend sets them on
# every module of the group) and not used: the watch runs no driver tool itself.
ARGS = options.WATCH
STOPPED_BY_ANOTHER_SERVER = "another server failed"
MARKER_COMPLETE_S = 2.0  # how long a follower waits for an early marker to get its log tail
FULL_POLL_TIMEOUT_S = 30.0  # a full poll (a module round trip) unanswered this long counts as one miss
MISSED = object()  # what call_within returns for a call that got no answer
NO_SESSION = object()  # a Prober's session where the connection cannot have one: each probe is an ssh command


class Call:
    """``call()`` running in a daemon thread: a thread left hanging on a dead connection is not waited for."""

    def __init__(self, call: Any) -> None:
        self._box: dict = {}
        self._worker = threading.Thread(target=self._work, args=(call,), name="ascend-watch-call", daemon=True)
        self._worker.start()

    def _work(self, call: Any) -> None:
        try:
            self._box["value"] = call()
        except AnsibleConnectionFailure:
            self._box["value"] = MISSED
        except Exception as exc:  # pylint: disable=broad-except  # re-raised in the caller's thread
            self._box["error"] = exc

    def wait(self, seconds: float) -> bool:
        """Wait at most ``seconds``; True when the call has returned."""
        self._worker.join(seconds)
        return not self._worker.is_alive()

    def value(self) -> Any:
        """What the call returned; :data:`MISSED` while it runs or when it could not reach the server."""
        if self._worker.is_alive():
            return MISSED
        if "error" in self._box:
            raise self._box["error"]
        return self._box["value"]


class Prober:
    """Probes of one server, one at a time: a probe that missed its deadline is not replaced by the next one but
    waited for again. Its late answer proves the server alive and starts the misses over: a controller too busy
    to run ``ssh`` within ``probe_timeout`` (measured at load 20: a healthy server's probes missed twice and its
    job was stopped as lost) is not a dead server. A dead server's probe never answers, so it is lost as soon as
    before; and a busy controller does not pile up a new ``ssh`` per round."""

    def __init__(self) -> None:
        self.pending: Call | None = None
        self.started = 0  # probes started (for the tests)
        # the shell session the probes run in (plugin_utils/_shell_session); NO_SESSION where none applies
        self.session: Any = None

    def ask(self, call: Any, seconds: float) -> Any:
        """The answer of the probe outstanding, else of ``call()`` (started now), within ``seconds``; :data:`MISSED`
        when it has not answered yet or could not reach the server."""
        if self.pending is None:
            self.pending = Call(call)
            self.started += 1
        running = self.pending
        if running.wait(seconds):
            self.pending = None
        return running.value()


def call_within(call: Any, seconds: float) -> Any:
    """``call()`` in a daemon thread, waiting at most ``seconds``; :data:`MISSED` when it did not return
    in time or could not reach the server (AnsibleConnectionFailure)."""
    running = Call(call)
    running.wait(seconds)
    return running.value()


def _write_json(path: str, data: Any) -> None:
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="utf-8") as handle:
        json.dump(data, handle)
    os.replace(tmp, path)


def _read_json(path: str) -> Any:
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return None


def claim_failure(marker: str, failure: dict) -> dict:
    """Write the failure marker unless one exists; the marker's content (ours or the earlier one)."""
    try:
        fd = os.open(marker, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        for _attempt in range(20):
            found = _read_json(marker)
            if found:
                return found
            time.sleep(0.05)
        return failure
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        json.dump(failure, handle)
    return failure


def read_marker(marker: str, complete_within: float = 0.0) -> dict | None:
    """The marker's failure record (None when there is no marker); waits up to ``complete_within`` s
    for an early claim to be completed with its log tail, and for a half-written one to be readable."""
    if not os.path.exists(marker):
        return None
    deadline = time.time() + complete_within
    while True:
        found = _read_json(marker)
        if (found and not found.get("early")) or time.time() >= deadline:
            return found or {"rank_id": -1, "error": "another server's watcher failed the job"}
        time.sleep(0.05)


class ActionModule(ActionBase):
    """Watch the ranks of one server; see the module docstring."""

    TRANSFERS_FILES = False
    _requires_connection = True

    def _poll(self, args: dict, task_vars: dict) -> dict:
        return self._execute_module(module_name=MODULE, module_args=args, task_vars=task_vars)

    def _progress(self, hosts_dir: str, job_id: str) -> None:
        counts = {"staged": 0, "running": 0, "done": 0, "failed": 0, "stopped": 0, "pending": 0}
        rank0 = ""
        for name in sorted(os.listdir(hosts_dir)):
            summary = _read_json(os.path.join(hosts_dir, name)) or {}
            for rank in summary.get("ranks", []):
                counts[rank["state"]] = counts.get(rank["state"], 0) + 1
                if rank["rank_id"] == 0 and rank.get("tail"):
                    rank0 = rank["tail"][-1]
        shown = ", ".join(f"{k} {v}" for k, v in counts.items() if v)
        display.display(f"[{job_id}] {time.strftime('%H:%M:%S')} ranks: {shown} | rank 0: {rank0[-160:]}")

    def _shell(self, command: str) -> str:
        """One cheap shell command on the server (no module round trip); its stdout."""
        return self._low_level_execute_command(command, sudoable=True).get("stdout", "")

    def _twin(self) -> ActionModule:
        """This action on its own copy of the connection (and of its shell and become plugins, which keep
        per-command state), to probe the server while a full poll runs on the original."""
        twin = copy.copy(self)
        connection = copy.copy(self._connection)
        connection._shell = copy.copy(connection._shell)  # pylint: disable=protected-access
        if connection.become is not None:
            connection.become = copy.copy(connection.become)
        twin._connection = connection
        return twin

    def _poll_probed(self, args: dict, task_vars: dict, remote_job_dir: str, ranks: list, opts: dict, misses: watch.Misses) -> tuple:
        """A full poll, probing the server every ``poll_interval`` meanwhile (a full poll takes seconds, and
        a server may die during one): ``(result or None, misses)``; None when it got no answer within
        :data:`FULL_POLL_TIMEOUT_S` or two probes in a row missed while it ran."""
        sent = time.time()
        running = Call(partial(self._poll, args, task_vars))
        twin = None
        while not running.wait(opts["poll_interval"]) and time.time() - sent < FULL_POLL_TIMEOUT_S:
            twin = twin or self._twin()
            probed_at = time.time()
            misses = watch.count_miss(misses, twin._probe(remote_job_dir, ranks, opts["probe_timeout"]) is not None, probed_at)
            if misses.in_a_row >= watch.LOST_AFTER:
                return None, misses
        polled = running.value()
        if polled is MISSED:
            return None, watch.count_miss(misses, False, sent)
        return polled, watch.Misses()

    def _probe(self, remote_job_dir: str, ranks: list, timeout: float) -> dict | None:
        """The job's first abort reason, how many local ranks have ended and which lost their runner,
        from one shell command; None when it got no answer within ``timeout`` or did not run through."""
        rank_dirs = [posixpath.dirname(r["log"]) for r in ranks]
        runners = [
            (r["rank_id"], r["runner_pid"], d)
            for r, d in zip(ranks, rank_dirs)
            if r.get("runner_pid") and r["state"] in ("staged", "running")
        ]
        prober = self.__dict__.setdefault("_prober", Prober())  # shared with the twin (copy.copy), one probe at a time
        stdout = prober.ask(partial(self._probe_shell, prober, files.probe_command(remote_job_dir, rank_dirs, runners)), timeout)
        return None if stdout is MISSED else files.parse_probe(stdout)

    def _probe_shell(self, prober: Prober, command: str) -> str:
        """``command``'s stdout from the prober's shell session on the server (made at the first probe, made again after
        one that ended); where no session applies (another connection type, become), one ssh command as before."""
        if prober.session is NO_SESSION:
            return self._shell(command)
        if prober.session is None:
            argv = shell_session.session_argv(self._connection)
            if argv is None:
                prober.session = NO_SESSION
                return self._shell(command)
            prober.session = shell_session.ShellSession(argv)
        session = prober.session  # the watch's end may close it and drop it while this probe still waits
        try:
            return session.run(command)
        except AnsibleConnectionFailure:
            session.close()
            if prober.session is session:
                # one that answered before: the connection dropped, try a new one next time; one that never answered may
                # not work with this connection's set-up at all: one command per probe from now on
                prober.session = None if session.answered else NO_SESSION
            raise

    def _end_session(self) -> None:
        """End the probes' shell session (the ssh client, or the local shell), if one was made."""
        prober = self.__dict__.get("_prober")
        if prober is not None and isinstance(prober.session, shell_session.ShellSession):
            prober.session.close()
            prober.session = None

    def _fast_stop(self, remote_job_dir: str, ranks: list, reason: str = STOPPED_BY_ANOTHER_SERVER) -> None:
        """Abort the gate and TERM every running rank's process group with one shell command."""
        groups = " ".join(f"-{int(r['pid'])}" for r in ranks if r.get("pid") and r["state"] in ("running", "staged"))
        abort = quote(posixpath.join(remote_job_dir, files.ABORT_FILE))
        command = f"echo {quote(reason)} >> {abort}"
        if groups:
            command += f"; kill -TERM {groups} 2>/dev/null"  # no "--": dash's kill refuses it
        self._shell(command + "; true")

    def run(self, tmp: Any = None, task_vars: dict | None = None) -> dict:
        with interrupt.Guard() as guard:
            self._guard = guard
            try:
                return self._watch(tmp, task_vars or {})
            except interrupt.Interrupted as exc:
                return self._interrupted(guard, exc.signum, task_vars or {})
            finally:
                self._end_session()

    def _watch(self, tmp: Any, task_vars: dict) -> dict:
        result = super().run(tmp, task_vars)
        unknown = sorted(set(self._task.args) - set(ARGS))
        if unknown:  # said the way every task of the role would want it, before the validator's longer text
            raise AnsibleActionFail(f"unknown options: {', '.join(unknown)}")
        _validation, opts = self.validate_argument_spec(argument_spec=ARGS)
        server: str = opts["server"] or task_vars["inventory_hostname"]
        job_dir = os.path.join(opts["controller_dir"], opts["job_id"])
        remote_job_dir = files.job_dir(opts["job_root"], opts["job_id"])
        hosts_dir = os.path.join(job_dir, "hosts")
        os.makedirs(hosts_dir, exist_ok=True)
        marker = os.path.join(job_dir, "failed")
        poll_args = {
            "state": "poll",
            "job_id": opts["job_id"],
            "job_root": opts["job_root"],
            "grace": opts["grace"],
            "tail_lines": 1,
            "tail_failed": opts["tail_lines"],
            "stop_on_failure": True,
        }
        stop_args = {
            "state": "stop",
            "job_id": opts["job_id"],
            "job_root": opts["job_root"],
            "grace": opts["grace"],
            "reason": STOPPED_BY_ANOTHER_SERVER,
        }
        last_progress = 0.0
        next_full = 0.0
        ranks: list = []
        misses = watch.Misses()
        # the last poll, read with the results in one call once every rank has ended; at first the stage's reading of
        # the ranks (the same rank states a full poll returns), taken as one: the next full poll comes as after a poll
        prefetched = {"ranks": opts["ranks"]} if opts["ranks"] else None
        while True:
            polled, prefetched = prefetched, None
            if polled is not None or time.time() >= next_full:
                if polled is None:
                    polled, misses = self._poll_probed(poll_args, task_vars, remote_job_dir, ranks, opts, misses)
                if polled is not None and not polled.get("failed"):
                    ranks = polled["ranks"]
                    _write_json(os.path.join(hosts_dir, f"{server}.json"), {"server": server, "ranks": ranks})
                    if any(r["rank_id"] == 0 for r in ranks) and time.time() - last_progress >= opts["progress_interval"]:
                        last_progress = time.time()
                        self._progress(hosts_dir, opts["job_id"])
                next_full = time.time() + 1.0  # after a missed full poll: probe first, poll again soon
            decision = watch.step(watch.Seen(server, ranks, polled=polled, marker=read_marker(marker), misses=misses))
            if polled is not None:
                next_full = time.time() + (1.0 if decision.soon else opts["full_poll_interval"])
            if decision.action == watch.SUCCEED:
                self._results(result, opts, task_vars)
                return dict(result, changed=False, server=server, ranks=ranks, msg=f"{len(ranks)} ranks on {server} finished")
            if decision.action == watch.FAIL:
                first = self._claim(marker, server, decision.failure or {})
                if misses.in_a_row < watch.LOST_AFTER:  # not from a server that stopped answering: the call would hang
                    self._results(result, opts, task_vars)
                return self._finish(result, server, ranks, first, misses)
            if decision.action == watch.FOLLOW:
                if misses.in_a_row < watch.LOST_AFTER:  # a server that stopped answering cannot be told to stop
                    stopped = call_within(
                        partial(self._follow, remote_job_dir, ranks, stop_args, task_vars), FULL_POLL_TIMEOUT_S + opts["grace"]
                    )
                    ranks = ranks if stopped is MISSED else stopped.get("ranks", ranks)
                    if stopped is not MISSED:
                        self._results(result, opts, task_vars)
                return self._finish(result, server, ranks, read_marker(marker, MARKER_COMPLETE_S) or {}, misses)
            self._sleep_unless(marker, opts["poll_interval"])
            if self._guard.parent_gone():  # ansible-playbook was killed (kill -9): leave the job, as it would
                return dict(result, failed=True, server=server, msg=f"the controller died; job {opts['job_id']} left running")
            if os.path.exists(marker):
                continue
            sent = time.time()
            probe = self._probe(remote_job_dir, ranks, opts["probe_timeout"])
            misses = watch.count_miss(misses, probe is not None, sent)
            decision = watch.step(watch.Seen(server, ranks, probe=probe, misses=misses))
            if decision.action == watch.CLAIM_EARLY:  # a rank failed here: tell the other servers now, read the details next
                claim_failure(marker, decision.failure or {})
            if decision.action in (watch.CLAIM_EARLY, watch.POLL_NOW):
                next_full = 0.0
            if decision.action == watch.POLL_NOW and probe and self._all_ended(probe, ranks, opts):
                prefetched = self._results(result, opts, task_vars, poll=poll_args)
            if decision.action == watch.FAIL:  # the server stopped answering: its ranks are lost
                return self._finish(result, server, ranks, self._claim(marker, server, decision.failure or {}), misses)

    @staticmethod
    def _all_ended(probe: dict, ranks: list, opts: dict) -> bool:
        """Every local rank ended by itself (no abort, no lost runner): the results can be read with the last poll."""
        return bool(opts["results_file"] and ranks and probe["final"] >= len(ranks) and not probe.get("abort") and not probe.get("gone"))

    def _results(self, result: dict, opts: dict, task_vars: dict, poll: dict | None = None) -> dict | None:
        """With ``results_file``: the server's results and logs (``training_results``) into ``result["results"]``, once;
        never fails the watch. With ``poll`` (the poll's arguments) the same call reads every rank's state: returned as
        the poll's result (None when it could not be read)."""
        if not opts["results_file"] or "results" in result:
            return None
        args = {
            "job_id": opts["job_id"],
            "job_root": opts["job_root"],
            "results_file": opts["results_file"],
            "timeout": opts["results_timeout"],
        }
        if opts["logs_dest"]:
            args["dest"] = opts["logs_dest"]
        if poll:
            args.update(poll=True, tail_lines=poll["tail_lines"], tail_failed=poll["tail_failed"])
        try:
            collected = collect(self, args, task_vars)
        except AnsibleError as exc:  # a connection that broke at the very end: the watch's outcome stands
            collected = {"failed": True, "msg": f"cannot collect the results of {opts['job_id']}: {exc}"}
        polled = {key: collected.pop(key) for key in ("ranks", "failed_rank", "stopped", "abort") if key in collected}
        result["results"] = collected
        return polled if "ranks" in polled else None

    def _follow(self, remote_job_dir: str, ranks: list, stop_args: dict, task_vars: dict) -> dict:
        """Stop the local ranks because another server's watcher failed the job: the fast TERM, then ``state=stop``."""
        self._fast_stop(remote_job_dir, ranks)
        return self._poll(stop_args, task_vars)

    def _interrupted(self, guard: interrupt.Guard, signum: int, task_vars: dict) -> dict:
        """Ctrl-C or SIGTERM to ansible-playbook: stop this server's ranks, or leave them running; say which.

        A Ctrl-C stops after ``interrupt_window`` s unless the main process dies first (a second
        Ctrl-C, which Ansible does not forward); a SIGTERM stops at once. ``detach_on_interrupt``
        leaves the job running. The first watcher to be interrupted speaks for the job; each says
        what it stopped on its server.
        """
        _validation, opts = self.validate_argument_spec(argument_spec=ARGS)
        server: str = opts["server"] or task_vars.get("inventory_hostname", "?")
        job_id = opts["job_id"]
        job_dir = os.path.join(opts["controller_dir"], job_id)
        hosts_dir = os.path.join(job_dir, "hosts")
        servers = len(os.listdir(hosts_dir)) if os.path.isdir(hosts_dir) else 0
        first = _claim_file(os.path.join(job_dir, "interrupted"))
        why = interrupt.cause(signum)
        detach = opts["detach_on_interrupt"]
        if not detach and signum == signal.SIGINT and opts["interrupt_window"] > 0:
            if first:
                guard.say(
                    f"[{job_id}] {why}: stopping job {job_id} on {servers or 'every'} server(s) - "
                    f"press Ctrl-C again within {opts['interrupt_window']:g} s to leave it running"
                )
            if guard.wait_for_parent_death(opts["interrupt_window"]):
                detach, why = True, "Ctrl-C twice on the controller"
        if detach:
            if first:
                for line in left_running_lines(job_id, why, servers, task_vars):
                    guard.say(line)
            msg = f"{why}: job {job_id} left running on server {server}"
            return dict(failed=True, changed=False, server=server, interrupted={"signal": signum, "action": "left_running"}, msg=msg)
        reason = f"{why} (ansible-playbook of {os.environ.get('USER') or 'an unknown user'})"
        # TERM the ranks of the last poll at once (one shell command), then stop as stop.yml does
        summary = _read_json(os.path.join(hosts_dir, f"{server}.json")) or {}
        if summary.get("ranks"):
            self._fast_stop(files.job_dir(opts["job_root"], job_id), summary["ranks"], reason)
        stop_args = {"state": "stop", "job_id": job_id, "job_root": opts["job_root"], "grace": opts["grace"], "reason": reason}
        stopped = self._poll(stop_args, task_vars)
        ranks: list = []
        if stopped.get("failed"):
            msg = f"{why}: could not stop job {job_id} on server {server}: {stopped.get('msg')}"
        else:
            ranks = [r["rank_id"] for r in stopped.get("ranks") or [] if r.get("state") == "stopped"]
            done = f"ranks {watch.rank_ranges(ranks)} stopped" if ranks else "no rank was running"
            msg = f"{why}: job {job_id} on server {server}: {done}, its devices are free"
        guard.say(f"[{job_id}] {msg}")
        interrupted = {"signal": signum, "action": "stopped", "stopped": ranks}
        return dict(failed=True, changed=True, server=server, interrupted=interrupted, msg=msg)

    @staticmethod
    def _claim(marker: str, server: str, failure: dict) -> dict:
        """Claim the marker with ``failure``; the job's first failure (this one replaces our own early claim)."""
        first = claim_failure(marker, failure)
        if first is not failure and watch.supersedes(first, server) and failure.get("rank_id", -1) >= 0:
            _write_json(marker, failure)
            return failure
        return first

    @staticmethod
    def _sleep_unless(marker: str, seconds: float) -> None:
        """Sleep between polls, waking up at once when another server's watcher marks a failure."""
        deadline = time.time() + seconds
        while time.time() < deadline and not os.path.exists(marker):
            time.sleep(0.05)

    @staticmethod
    def _finish(result: dict, server: str, ranks: list, first: dict, misses: watch.Misses) -> dict:
        lost = misses.in_a_row >= watch.LOST_AFTER  # the play's later tasks leave this server alone (its report)
        return dict(
            result,
            failed=True,
            changed=True,
            server=server,
            ranks=ranks,
            first_failure=first,
            host_lost=lost,
            msg=watch.failure_message(first),
        )


def _claim_file(path: str) -> bool:
    """Create ``path`` unless it exists: True for the first caller."""
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
    except FileExistsError:
        return False
    except OSError:
        return True
    return True


def left_running_lines(job_id: str, why: str, servers: int, task_vars: dict) -> list:
    """What the operator is told when the job is left running: the exact status and stop commands."""
    inventories = context.CLIARGS.get("inventory") or ()
    args = "".join(f" -i {quote(str(source))}" for source in inventories)
    hosts = task_vars.get("ascend_hosts")
    if isinstance(hosts, str) and hosts and hosts != "ascend":
        args += f" -e {quote('ascend_hosts=' + hosts)}"
    args += f" -e {quote('job_id=' + job_id)}"
    return [
        f"[{job_id}] {why}: job {job_id} left running on {servers or 'every'} server(s), not watched any more.",
        f"[{job_id}]   follow it: ansible-playbook ascend.cluster.status{args}",
        f"[{job_id}]   stop it:   ansible-playbook ascend.cluster.stop{args}",
    ]
