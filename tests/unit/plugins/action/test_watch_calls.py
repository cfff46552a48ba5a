"""The training watch (plugins/action/training_watch): its reads of the coordinator's server run with a deadline, and its loop.

A dead server's connection can hang for minutes; the watcher must count such a call as missed
after its deadline, and the same for a call that cannot connect at all.
"""

from __future__ import annotations

import json
import threading
import time
import types
from functools import partial
from typing import Any, cast

import pytest
from ansible.errors import AnsibleConnectionFailure

from ansible_collections.ascend.cluster.plugins.action import training_watch as action
from ansible_collections.ascend.cluster.plugins.plugin_utils import _interrupt as interrupt


def test_an_answer_in_time_is_returned():
    assert action.call_within(lambda: "ascend-probe-ok", 5.0) == "ascend-probe-ok"


def test_a_call_that_hangs_is_missed_at_its_deadline_and_not_waited_for():
    release = threading.Event()
    try:
        assert action.call_within(lambda: release.wait(60), 0.2) is action.MISSED
        hung = [t for t in threading.enumerate() if t.name == "ascend-watch-call" and t.is_alive()]
        assert hung and all(t.daemon for t in hung)  # it cannot keep the worker process alive
    finally:
        release.set()


def test_a_call_that_cannot_connect_is_missed():
    def unreachable():
        raise AnsibleConnectionFailure("ssh: connect to host h2 port 22: No route to host")

    assert action.call_within(unreachable, 5.0) is action.MISSED


def test_any_other_error_is_raised_in_the_watcher():
    def broken():
        raise ValueError("a bug")

    with pytest.raises(ValueError, match="a bug"):
        action.call_within(broken, 5.0)


def test_a_late_probe_answer_is_waited_for_by_the_next_round_and_proves_the_server_alive():
    """A controller too busy to run ssh in time: the probe answers after its deadline; the next round waits for that
    same probe (no second ssh) and takes its answer, so the misses start over instead of reaching LOST_AFTER."""
    release = threading.Event()
    prober = action.Prober()
    try:
        assert prober.ask(lambda: release.wait(60) and "late", 0.1) is action.MISSED
        release.set()  # it answers between the rounds
        assert prober.ask(lambda: "a second probe", 5.0) == "late"
        assert prober.started == 1
        assert prober.ask(lambda: "fresh", 5.0) == "fresh" and prober.started == 2  # answered: the next round asks anew
    finally:
        release.set()


def test_a_probe_that_never_answers_misses_every_round_and_is_not_asked_again():
    release = threading.Event()
    prober = action.Prober()
    try:
        assert [prober.ask(lambda: release.wait(60), 0.05) for _round in range(3)] == [action.MISSED] * 3
        assert prober.started == 1  # one hung ssh, not one per round
    finally:
        release.set()


def test_a_probe_that_cannot_connect_misses_and_the_next_round_asks_anew():
    def unreachable():
        raise AnsibleConnectionFailure("ssh: connect to host h2 port 22: No route to host")

    prober = action.Prober()
    assert prober.ask(unreachable, 5.0) is action.MISSED
    assert prober.ask(lambda: "back", 5.0) == "back" and prober.started == 2


class LoopWatch(action.ActionModule):
    """The whole watch loop (``_watch``) on a fake coordinator's server: ``reads`` are what each read of group.json
    returns (None: no answer in time)."""

    def __init__(self, reads):  # pylint: disable=super-init-not-called  # no task, no connection
        self.reads = list(reads)
        self.count = 0

    def _read(self, remote_job_dir, timeout):
        self.count += 1
        read = self.reads.pop(0) if len(self.reads) > 1 else self.reads[0]
        if isinstance(read, tuple):  # (group.json's text, the member view on that server)
            read, self.__dict__["_member"] = read
        return read() if callable(read) else read


GUARD = cast(Any, types.SimpleNamespace(parent_gone=lambda: False))
OPTS = {
    "job_id": "J",
    "job_root": "/var/lib/j",
    "controller_dir": "",
    "coordinator": "h1",
    "poll_interval": 0.01,
    "probe_timeout": 0.1,
    "progress_interval": 100.0,
    "lost_after": 0.1,
    "grace": 0.1,
}


def text(status: str, **more: Any) -> str:
    return json.dumps(dict({"status": status, "counts": {}, "members": {}}, **more))


def test_the_watch_follows_the_group_until_it_ends_and_returns_every_rank(tmp_path):
    ranks = [{"rank_id": 0, "state": "done", "host": "h1", "server": "a"}, {"rank_id": 1, "state": "done", "host": "h2", "server": "b"}]
    loop = LoopWatch(["", text("forming"), text("running"), None, text("running"), text("ended", ranks=ranks, cause=None)])
    result = loop._watch(dict(OPTS, controller_dir=str(tmp_path)), GUARD)
    assert result["msg"] == "2 ranks finished" and "failed" not in result and loop.count == 6
    assert json.loads((tmp_path / "J" / "group.json").read_text())["status"] == "ended"  # the last view kept on the controller


def test_two_reads_in_a_row_without_an_answer_make_the_coordinators_server_lost(tmp_path):
    loop = LoopWatch([text("running"), None, None])
    result = loop._watch(dict(OPTS, controller_dir=str(tmp_path)), GUARD)
    assert result["coordinator_lost"] and result["failed"] and loop.count == 3


def test_a_group_that_does_not_confirm_its_end_is_reported_with_what_is_known(tmp_path, monkeypatch):
    monkeypatch.setattr(action, "END_SLACK_S", 0.1)
    cause = {"host": "h1", "server": "a", "rank_id": -1, "stopped_by": "stop"}
    loop = LoopWatch([text("stopping", cause=cause)])
    result = loop._watch(dict(OPTS, controller_dir=str(tmp_path)), GUARD)
    assert result["failed"] and result["msg"].endswith("(the group did not confirm every rank ended within 0.3 s)")


def test_a_job_without_a_group_view_is_said_so(tmp_path, monkeypatch):
    monkeypatch.setattr(action, "NO_VIEW_S", 0.05)
    result = LoopWatch([""])._watch(dict(OPTS, controller_dir=str(tmp_path)), GUARD)
    assert result["failed"] and "has no group on h1" in result["msg"]


def test_the_watch_leaves_the_job_to_its_group_when_ansible_playbook_dies(tmp_path):
    gone = cast(Any, types.SimpleNamespace(parent_gone=lambda: True))
    result = LoopWatch([text("running")])._watch(dict(OPTS, controller_dir=str(tmp_path)), gone)
    assert result["failed"] and "left running, supervised by its group" in result["msg"]


def test_the_controllers_user_is_named_without_user_in_the_environment(monkeypatch):
    monkeypatch.delenv("USER", raising=False)
    assert interrupt.controller_user() not in ("", "an unknown user")


class ProbeRoute(action.ActionModule):
    """The action's probe route only: ``_shell`` (one command over the connection) records what it ran."""

    def __init__(self, transport):  # pylint: disable=super-init-not-called  # no task
        self._connection = cast(Any, types.SimpleNamespace(transport=transport, become=None))
        self.shelled: list = []

    def _shell(self, command):
        self.shelled.append(command)
        return "shelled\n"


def test_probes_on_a_local_connection_share_one_shell_session_which_ends_with_the_watch():
    watch = ProbeRoute("local")
    prober = action.Prober()
    answers = [watch._session_shell(prober, "echo $$") for _probe in range(5)]
    session = prober.session
    assert len(set(answers)) == 1 and answers[0] == f"{session.pid}\n" and watch.shelled == []
    watch.__dict__["_prober"] = prober
    watch._end_session()
    assert prober.session is None and session._proc.poll() is not None  # the shell has ended


def test_probes_go_one_command_each_where_no_session_applies_or_one_never_answered(monkeypatch):
    watch = ProbeRoute("paramiko")
    prober = action.Prober()
    assert watch._session_shell(prober, "echo hi") == "shelled\n" and prober.session is action.NO_SESSION
    watch = ProbeRoute("local")
    monkeypatch.setattr(action.shell_session, "session_argv", lambda connection: ["/bin/true"])  # ends at once
    prober = action.Prober()
    with pytest.raises(AnsibleConnectionFailure):  # counted as a missed probe by the caller
        watch._session_shell(prober, "echo hi")
    assert prober.session is action.NO_SESSION
    assert watch._session_shell(prober, "echo hi") == "shelled\n" and watch.shelled == ["echo hi"]


def test_a_probe_still_waiting_when_the_watch_ends_its_session_leaves_the_prober_alone():
    watch = ProbeRoute("local")
    prober = action.Prober()
    watch.__dict__["_prober"] = prober
    assert prober.ask(partial(watch._session_shell, prober, "echo first"), 5.0) == "first\n"
    late = prober.ask(partial(watch._session_shell, prober, "sleep 30; echo late"), 0.2)
    assert late is action.MISSED and prober.pending is not None
    watch._end_session()  # the watch returns: the waiting probe gets EOF, a connection failure, in its own thread
    assert prober.pending.wait(5.0) and prober.pending.value() is action.MISSED
    assert prober.session is None  # not NO_SESSION, not a closed session put back


def guard_for(rounds: int) -> Any:
    """A guard whose ansible-playbook "dies" after ``rounds`` rounds: a watch that never ends by itself ends there."""
    seen = iter(range(rounds))
    return cast(Any, types.SimpleNamespace(parent_gone=lambda: next(seen, None) is None))


def test_a_coordinator_killed_while_its_server_answers_is_named_within_lost_after_and_a_heartbeat(tmp_path):
    """Issue 34: the coordinator killed during a watched train - group.json stays as it was, ``running``; the watch printed
    "ranks: running 16" for minutes. Now, once its ``updated`` has not moved for lost_after + a heartbeat, the watch ends
    naming the coordinator (its server, when), blaming no server, for the play to read every server's real states."""
    began = time.time()
    loop = LoopWatch([text("running", updated=began, endpoint="10.0.0.1:29700")])
    result = loop._watch(dict(OPTS, controller_dir=str(tmp_path)), guard_for(2000))
    took = time.time() - began
    assert result["failed"] and result["coordinator_lost"] and result["lost_hosts"] == [], result
    assert 0.1 + 0.5 < took < 0.1 + 0.5 + 1.0, took
    when = time.strftime("%H:%M:%S", time.localtime(began))
    assert result["msg"].startswith(
        f"the job's coordinator on h1 (10.0.0.1:29700) went silent at {when}: its group.json was not rewritten for "
    )
    assert result["first_failure"]["coordinator"] == "h1" and result["first_failure"]["rank_id"] == -1
    kept = json.loads((tmp_path / "J" / "group.json").read_text())
    assert kept["coordinator_gone"]["how"] == "silent"  # the controller's copy says why the watch ended


def test_a_coordinator_that_crashed_or_that_its_servers_member_lost_is_named_at_once(tmp_path):
    crashed = text("crashed", updated=1.0, crashed_at=1.0, endpoint="e:1", error="RuntimeError: x", log="/j/coordinator.log")
    result = LoopWatch([text("running", updated=0.5), crashed])._watch(dict(OPTS, controller_dir=str(tmp_path)), guard_for(50))
    assert result["coordinator_lost"] and result["lost_hosts"] == [], result
    assert (
        result["msg"].startswith("the job's coordinator on h1 (e:1) crashed at ")
        and ": RuntimeError: x (its log: /j/coordinator.log); " in result["msg"]
    )
    lost = {"state": "lost", "error": "lost the job's coordinator at e:1: no word from it for 3 s", "updated": 2.0}
    began = time.time()
    result = LoopWatch([(text("running", updated=1.0, endpoint="e:1"), lost)])._watch(
        dict(OPTS, controller_dir=str(tmp_path), lost_after=30.0), guard_for(2000)
    )
    assert result["coordinator_lost"] and " was lost at " in result["msg"] and "no word from it for 3 s" in result["msg"], result
    assert time.time() - began < 2.0  # the member said so: not lost_after (30 s here) of silence first


def test_a_coordinator_that_keeps_rewriting_its_view_is_followed_to_the_end(tmp_path):
    """A healthy coordinator rewrites group.json every heartbeat round: however long the job, the watch follows it."""
    ticks = iter(range(10**6))
    ranks = [{"rank_id": 0, "state": "done", "host": "h1", "server": "a"}]
    reads: list = [lambda: text("running", updated=float(next(ticks)))] * 80 + [text("ended", ranks=ranks, cause=None)]
    result = LoopWatch(reads)._watch(dict(OPTS, controller_dir=str(tmp_path), poll_interval=0.02), guard_for(2000))
    assert result["msg"] == "1 ranks finished" and "failed" not in result, result
