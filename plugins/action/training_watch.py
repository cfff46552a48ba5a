# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action training_watch: follow a job through its group until it ends; one task for the whole job.

The job watches itself (``module_utils/_job_group``): every server's supervisor is a member of the job's group, and
the coordinator, on rank 0's server, relays the first failure, stop or lost server to every member within a fraction
of a second. The controller only follows: this action runs once for the play (``run_once``, delegated to the
coordinator's server) and reads the coordinator's ``group.json`` every ``poll_interval`` with one shell command, in
one shell session held for the whole watch (``plugin_utils/_shell_session``: ``ssh ... /bin/sh`` over the connection
Ansible holds, or a local shell; one command over the connection where no session applies). So the controller holds
one worker and one SSH session whatever the number of servers, and Ansible's ``forks`` does not matter. What it
reads, writes and runs on the job's files (the read of ``group.json``, the stop line in the abort file, the controller's
copy of the view) is ``module_utils/_job_files``'s, which owns their protocol.

- Progress (ranks by state, rank 0's last log line) every ``progress_interval``, from the group's counts.
- When the group has ended: every rank's final state, and when the job did not finish its first failure and the
  one message the play fails with (``plugin_utils/_watch.verdict``). The message says every rank was stopped only
  when the group confirmed it.
- When the coordinator's server stops answering the controller (two reads in a row get no answer within
  ``probe_timeout``, or fail to connect): the watch ends saying so; every member stops its ranks on its own when it
  loses the coordinator, and the role then asks each server what is left.
- When the coordinator is gone while its server answers - ``group.json`` says it crashed, the member on its server
  lost it, or ``group.json`` is not rewritten for ``lost_after`` and a heartbeat (``_watch.coordinator_gone``) - the watch
  ends within about ``lost_after`` + 1 s naming it (its server, when, the error), blaming no server; the role then asks
  every server, the coordinator's too, for its ranks' real states.
- A Ctrl-C or SIGTERM to ``ansible-playbook``: the job's stop is written on the coordinator's server (the job's abort
  file there: its supervisor passes it to the group), and the watch waits for the group to confirm every rank
  stopped; or, with ``detach_on_interrupt`` (or a second Ctrl-C within ``interrupt_window``), the job is left running
  and the commands that follow and stop it are printed.
- ``ansible-playbook`` killed outright: the watch ends without touching the job (the group goes on supervising it).
"""

from __future__ import annotations

import os
import signal
import threading
import time
from functools import partial
from shlex import quote
from typing import Any

from ansible import context
from ansible.errors import AnsibleActionFail, AnsibleConnectionFailure
from ansible.plugins.action import ActionBase
from ansible.utils.display import Display

from ansible_collections.ascend.cluster.plugins.module_utils import _job_files as files
from ansible_collections.ascend.cluster.plugins.module_utils import _job_group as group
from ansible_collections.ascend.cluster.plugins.module_utils import _options as options
from ansible_collections.ascend.cluster.plugins.plugin_utils import _interrupt as interrupt
from ansible_collections.ascend.cluster.plugins.plugin_utils import _shell_session as shell_session
from ansible_collections.ascend.cluster.plugins.plugin_utils import _watch as watch

display = Display()

ARGS = options.WATCH
NO_VIEW_S = 30.0  # a job whose coordinator wrote no group.json this long after the watch began has no group
END_SLACK_S = 15.0  # beyond kill grace + lost_after: how long a stopping group may take to confirm every rank ended
MISSED = object()  # what a call that got no answer returns
NO_SESSION = object()  # a Prober's session where the connection cannot have one: each read is an ssh command


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
    """Reads of the coordinator's server, one at a time: a read that missed its deadline is not replaced by the next
    one but waited for again. Its late answer proves the server alive and starts the misses over: a controller too busy
    to run ``ssh`` within ``probe_timeout`` is not a dead server. A dead server's read never answers, so it is lost as
    soon as before; and a busy controller does not pile up a new ``ssh`` per round."""

    def __init__(self) -> None:
        self.pending: Call | None = None
        self.started = 0  # reads started (for the tests)
        self.session: Any = None  # the shell session the reads run in; NO_SESSION where none applies

    def ask(self, call: Any, seconds: float) -> Any:
        """The answer of the read outstanding, else of ``call()`` (started now), within ``seconds``; :data:`MISSED`
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


class NotRecorded(Exception):
    """The job is not recorded in this job directory on the coordinator's server."""


class Denied(Exception):
    """The job's group view is on the coordinator's server, but the user the watch runs as may not read it."""


class ActionModule(ActionBase):
    """Follow one job's group; see the module docstring."""

    TRANSFERS_FILES = False
    _requires_connection = True

    def _shell(self, command: str) -> str:
        """One shell command on the coordinator's server over the task's connection; its stdout."""
        return self._low_level_execute_command(command, sudoable=True).get("stdout", "")

    def _read(self, remote_job_dir: str, timeout: float) -> str | None:
        """The text of the coordinator's group.json ('' when there is none yet); None when the read got no answer
        within ``timeout`` or did not run through; :class:`NotRecorded` when the job is not recorded there,
        :class:`Denied` when this user may not read it. The member view on that server is kept in ``_member``."""
        prober = self.__dict__.setdefault("_prober", Prober())
        stdout = prober.ask(partial(self._session_shell, prober, files.read_command(remote_job_dir)), timeout)
        if stdout is MISSED:
            return None
        ran, text = files.parse_read(str(stdout))
        if ran and text is None:
            raise NotRecorded(remote_job_dir)
        if ran and files.read_denied(str(stdout)):
            raise Denied(remote_job_dir)
        if ran:
            self.__dict__["_member"] = watch.parse_member(files.parse_member(str(stdout)))
        return text if ran else None

    def _session_shell(self, prober: Prober, command: str) -> str:
        """``command``'s stdout from the prober's shell session (made at the first read, made again after one that
        ended); where no session applies (another connection type, become), one ssh command."""
        if prober.session is NO_SESSION:
            return self._shell(command)
        if prober.session is None:
            argv = shell_session.session_argv(self._connection)
            if argv is None:
                prober.session = NO_SESSION
                return self._shell(command)
            prober.session = shell_session.ShellSession(argv)
        session = prober.session
        try:
            return session.run(command)
        except AnsibleConnectionFailure:
            session.close()
            if prober.session is session:
                prober.session = None if session.answered else NO_SESSION
            raise

    def _end_session(self) -> None:
        prober = self.__dict__.get("_prober")
        if prober is not None and isinstance(prober.session, shell_session.ShellSession):
            prober.session.close()
            prober.session = None

    def run(self, tmp: Any = None, task_vars: dict | None = None) -> dict:
        task_vars = task_vars or {}
        result = super().run(tmp, task_vars)
        unknown = sorted(set(self._task.args) - set(ARGS))
        if unknown:  # said the way every task of the role would want it, before the validator's longer text
            raise AnsibleActionFail(f"unknown options: {', '.join(unknown)}")
        _validation, opts = self.validate_argument_spec(argument_spec=ARGS)
        with interrupt.Guard() as guard:
            try:
                return dict(result, **self._watch(opts, guard))
            except interrupt.Interrupted as exc:
                return dict(result, **self._interrupted(opts, guard, exc.signum, task_vars))
            finally:
                self._end_session()

    def _record(self, opts: dict, view: dict) -> None:
        """The group's view, kept on the controller beside the job's other files (written when its status changes, and the
        last one at the end)."""
        directory = os.path.join(opts["controller_dir"], opts["job_id"])
        try:
            os.makedirs(directory, exist_ok=True)
            files.write_json(os.path.join(directory, files.GROUP_FILE), view)
        except OSError as exc:
            display.warning(f"cannot keep the job's group view in {directory}: {exc}")

    def _watch(self, opts: dict, guard: interrupt.Guard) -> dict:
        job_id, host = opts["job_id"], opts["coordinator"]
        remote_job_dir = files.job_dir(opts["job_root"], job_id)
        began = time.time()
        last_progress = 0.0
        stopping_since: float | None = None
        misses = watch.Misses()
        view: dict | None = None
        end_within = opts["grace"] + opts["lost_after"] + END_SLACK_S
        updated, fresh_at = None, time.time()  # the group view's last ``updated`` and when the watch first saw it
        while True:
            sent = time.time()
            try:
                text = self._read(remote_job_dir, opts["probe_timeout"])
            except NotRecorded:
                msg = f"job {job_id} is not recorded under {opts['job_root']} on {host}: check job_id, and the job_root of that server"
                return {"failed": True, "changed": False, "group": True, "job_id": job_id, "msg": msg, "ranks": [], "lost_hosts": []}
            except Denied:
                msg = (
                    f"permission denied: job {job_id}'s group view in {remote_job_dir} on {host} cannot be read by the user the "
                    "watch runs as: run the play as the user that launched the job, or with become"
                )
                return {"failed": True, "changed": False, "group": True, "job_id": job_id, "msg": msg, "ranks": [], "lost_hosts": []}
            misses = watch.count_miss(misses, text is not None, sent)
            if text:
                read = watch.parse_group(text)
                if read is not None and (view is None or read.get("status") != view.get("status")):
                    self._record(opts, read)  # the controller's copy follows the group's status (and says the watch runs)
                view = read or view
                if read is not None and read.get("updated") != updated:
                    updated, fresh_at = read.get("updated"), sent
            stale_for = sent - fresh_at if isinstance(updated, (int, float)) else 0.0  # a view without one says nothing
            if watch.ended(view) and not last_progress:  # a job that ended before the watch's first look: said once all the same
                display.display(watch.progress_line(job_id, view or {}, time.strftime("%H:%M:%S")))
            if watch.ended(view):
                self._record(opts, view or {})
                return watch.verdict(job_id, view or {})
            if misses.in_a_row >= watch.LOST_AFTER:
                return watch.unreachable(job_id, host, misses.since, view)
            if text:  # answered now: is the coordinator itself still there?
                lost_after = float((view or {}).get("lost_after") or opts["lost_after"])
                gone = watch.coordinator_gone(view, self.__dict__.get("_member"), stale_for, lost_after)
                if gone is not None:
                    self._record(opts, dict(view or {}, coordinator_gone=gone))
                    return watch.coordinator_lost(job_id, host, gone, view)
            now = time.time()
            if view is None and now - began > NO_VIEW_S:
                msg = f"job {job_id} has no group on {host} ({files.GROUP_FILE} in {remote_job_dir} was never written): was it launched?"
                return {"failed": True, "changed": False, "group": True, "job_id": job_id, "msg": msg, "ranks": [], "lost_hosts": []}
            if view is not None and view.get("status") == group.STOPPING:
                stopping_since = stopping_since or now
                if now - stopping_since > end_within:
                    self._record(opts, view)
                    ended_view = dict(view, status=group.ENDED, ranks=view.get("ranks") or [])
                    found = watch.verdict(job_id, ended_view)
                    found["msg"] = f"{found['msg']} (the group did not confirm every rank ended within {end_within:g} s)"
                    return found
            if view is not None and now - last_progress >= opts["progress_interval"]:
                last_progress = now
                display.display(watch.progress_line(job_id, view, time.strftime("%H:%M:%S")))
            if guard.parent_gone():  # ansible-playbook was killed (kill -9): the group goes on supervising the job
                return {"failed": True, "changed": False, "msg": f"the controller died; job {job_id} left running, supervised by its group"}
            time.sleep(max(0.0, opts["poll_interval"] - (time.time() - sent)))

    def _interrupted(self, opts: dict, guard: interrupt.Guard, signum: int, task_vars: dict) -> dict:
        """Ctrl-C or SIGTERM to ansible-playbook: stop the job through its group, or leave it running; say which.

        A Ctrl-C stops after ``interrupt_window`` s unless the main process dies first (a second Ctrl-C, which Ansible
        does not forward); a SIGTERM stops at once. ``detach_on_interrupt`` leaves the job running.
        """
        job_id = opts["job_id"]
        servers = opts["servers"]
        why = interrupt.cause(signum)
        detach = opts["detach_on_interrupt"]
        if not detach and signum == signal.SIGINT and opts["interrupt_window"] > 0:
            guard.say(
                f"[{job_id}] {why}: stopping job {job_id} on {servers or 'every'} server(s) - "
                f"press Ctrl-C again within {opts['interrupt_window']:g} s to leave it running"
            )
            if guard.wait_for_parent_death(opts["interrupt_window"]):
                detach, why = True, "Ctrl-C twice on the controller"
        if detach:
            for line in left_running_lines(job_id, why, servers, task_vars):
                guard.say(line)
            msg = f"{why}: job {job_id} left running on {servers or 'every'} server(s), supervised by its group"
            return dict(failed=True, changed=False, interrupted={"signal": signum, "action": "left_running"}, msg=msg)
        reason = f"{why} (ansible-playbook of {interrupt.controller_user()})"
        remote_job_dir = files.job_dir(opts["job_root"], job_id)
        answer = call_within(partial(self._shell, files.abort_command(remote_job_dir, reason)), max(5.0, 2 * opts["probe_timeout"]))
        problem = "no answer" if answer is MISSED else files.parse_abort_command(str(answer))
        if problem is not None:
            msg = f"{why}: could not stop job {job_id} through its coordinator on {opts['coordinator']}: {problem}; stop it with ascend.cluster.stop"
            guard.say(f"[{job_id}] {msg}")
            return dict(failed=True, changed=False, interrupted={"signal": signum, "action": "unreachable"}, msg=msg)
        deadline = time.time() + opts["grace"] + opts["lost_after"] + END_SLACK_S
        view = None
        while time.time() < deadline:
            try:
                text = self._read(remote_job_dir, opts["probe_timeout"])
            except NotRecorded:
                break
            view = (watch.parse_group(text) if text else None) or view
            if watch.ended(view):
                break
            time.sleep(opts["poll_interval"])
        found = watch.verdict(job_id, view) if view is not None and watch.ended(view) else None
        if found is None:
            msg = (
                f"{why}: job {job_id}: the stop was sent to its group, which did not confirm every rank ended within the wait; "
                "check with ascend.cluster.status"
            )
            stopped: list = []
        else:
            stopped = [r["rank_id"] for r in found["ranks"] if r.get("state") in watch.STOPPED_STATES]
            msg = watch.stop_line(why, job_id, found["ranks"], found.get("unconfirmed") or [])
        guard.say(f"[{job_id}] {msg}")
        ranks = found["ranks"] if found else []
        interrupted = {"signal": signum, "action": "stopped", "stopped": stopped}
        return dict(failed=True, changed=True, group=True, job_id=job_id, ranks=ranks, interrupted=interrupted, msg=msg)


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
