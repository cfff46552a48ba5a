"""The training watch's calls to a server run with a deadline (plugins/action/training_watch.call_within).

A dead server's connection can hang for minutes; the watcher must count such a call as missed
after its deadline, and the same for a call that cannot connect at all.
"""

from __future__ import annotations

import threading
import time
import types
from functools import partial
from typing import Any, cast

import pytest
from ansible.errors import AnsibleConnectionFailure

from ansible_collections.ascend.cluster.plugins.action import training_watch as action


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


class FakeWatch(action.ActionModule):
    """The action with its server calls replaced: ``poll`` and ``probes`` say how the server answers."""

    def __init__(self, poll, probes):  # pylint: disable=super-init-not-called  # no task, no connection
        self.poll, self.probes, self.twins = poll, list(probes), 0

    def _poll(self, args, task_vars):
        return self.poll()

    def _twin(self):
        self.twins += 1
        return self

    def _probe(self, remote_job_dir, ranks, timeout):
        return self.probes.pop(0) if self.probes else {"abort": None, "final": 0, "gone": []}


OPTS = {"poll_interval": 0.05, "probe_timeout": 2.0}
ANSWER: dict = {"abort": None, "final": 0, "gone": []}


def test_a_full_poll_that_answers_resets_the_misses():
    watch = FakeWatch(lambda: {"ranks": []}, [])
    polled, misses = watch._poll_probed({}, {}, "/run/j", [], OPTS, action.watch.Misses(1, 5.0))
    assert (polled, misses) == ({"ranks": []}, action.watch.Misses())


def test_a_server_that_dies_during_a_full_poll_is_lost_after_two_missed_probes():
    release = threading.Event()
    try:
        watch = FakeWatch(lambda: release.wait(60), [ANSWER, None, None])
        polled, misses = watch._poll_probed({}, {}, "/run/j", [], OPTS, action.watch.Misses())
        assert polled is None and misses.in_a_row == 2 and watch.twins == 1  # the probes ran on one twin connection
    finally:
        release.set()


def test_a_slow_full_poll_of_a_live_server_is_one_miss_at_its_deadline(monkeypatch):
    monkeypatch.setattr(action, "FULL_POLL_TIMEOUT_S", 0.3)
    release = threading.Event()
    try:
        polled, misses = FakeWatch(lambda: release.wait(60), [])._poll_probed({}, {}, "/run/j", [], OPTS, action.watch.Misses())
        assert polled is None and misses.in_a_row == 1
    finally:
        release.set()


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


class LoopWatch(FakeWatch):
    """The whole watch loop (``_watch``) on fakes, recording the order of its calls to the server."""

    def __init__(self, args, poll, probes):  # pylint: disable=super-init-not-called
        super().__init__(poll, probes)
        self._task = cast(Any, types.SimpleNamespace(args=args))
        self._guard = cast(Any, types.SimpleNamespace(parent_gone=lambda: False))
        self.calls: list = []

    def _poll(self, args, task_vars):
        self.calls.append("poll")
        return super()._poll(args, task_vars)

    def _probe(self, remote_job_dir, ranks, timeout):
        self.calls.append("probe")
        return super()._probe(remote_job_dir, ranks, timeout)


STAGED = [
    {"rank_id": r, "device_id": r, "state": "staged", "pid": None, "runner_pid": 4000 + r, "log": f"/run/j/device_{r}/train.log"}
    for r in (0, 1)
]
DONE = {"ranks": [dict(rank, state="done", rc=0) for rank in STAGED], "failed_rank": None, "stopped": [], "abort": None}


@pytest.mark.parametrize(("given", "first"), [(STAGED, "probe"), (None, "poll")], ids=["stage's ranks given", "none given"])
def test_with_the_stages_ranks_the_watch_probes_first_and_polls_fully_once(monkeypatch, tmp_path, given, first):
    """The stage has just read the ranks: the watch needs no full poll (a module round trip) before its first probe;
    the one full poll it makes is when the probe finds every rank ended."""
    monkeypatch.setattr(action.ActionBase, "run", lambda self, tmp=None, task_vars=None: {})
    args = {"job_id": "j1", "controller_dir": str(tmp_path), "poll_interval": 0.01, "progress_interval": 0.0}
    if given is not None:
        args["ranks"] = given
    calls: list = []

    def poll() -> dict:  # the ranks end with the second probe
        return DONE if calls.count("probe") >= 2 else {"ranks": STAGED}

    loop = LoopWatch(args, poll, [ANSWER, dict(ANSWER, final=2)])
    loop.calls = calls
    result = loop._watch(None, {"inventory_hostname": "h1"})
    assert not result.get("failed"), result
    assert result["msg"] == "2 ranks on h1 finished"
    assert loop.calls[0] == first
    assert loop.calls.count("poll") == (1 if given is not None else 2), loop.calls
    assert (tmp_path / "j1" / "hosts" / "h1.json").exists()  # the ranks were left for the progress line at once


def test_the_stages_staged_ranks_are_polled_fully_within_a_second_or_so(monkeypatch, tmp_path):
    """Staged at the gate, the stage's ranks have no pids yet: the first full poll comes as after a polled staged
    rank, about a second later, not a full_poll_interval later (the follower's fast stop needs the pids)."""
    monkeypatch.setattr(action.ActionBase, "run", lambda self, tmp=None, task_vars=None: {})
    args = {"job_id": "j1", "controller_dir": str(tmp_path), "poll_interval": 0.05, "full_poll_interval": 60.0, "ranks": STAGED}
    loop = LoopWatch(args, lambda: DONE, [])  # every probe: nothing ended yet
    began = time.monotonic()
    result = loop._watch(None, {"inventory_hostname": "h1"})
    assert result["msg"] == "2 ranks on h1 finished"
    assert loop.calls.count("poll") == 1 and time.monotonic() - began < 30, loop.calls


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
    answers = [watch._probe_shell(prober, "echo $$") for _probe in range(5)]
    session = prober.session
    assert len(set(answers)) == 1 and answers[0] == f"{session.pid}\n" and watch.shelled == []
    watch.__dict__["_prober"] = prober
    watch._end_session()
    assert prober.session is None and session._proc.poll() is not None  # the shell has ended


def test_probes_go_one_command_each_where_no_session_applies_or_one_never_answered(monkeypatch):
    watch = ProbeRoute("paramiko")
    prober = action.Prober()
    assert watch._probe_shell(prober, "echo hi") == "shelled\n" and prober.session is action.NO_SESSION
    watch = ProbeRoute("local")
    monkeypatch.setattr(action.shell_session, "session_argv", lambda connection: ["/bin/true"])  # ends at once
    prober = action.Prober()
    with pytest.raises(AnsibleConnectionFailure):  # counted as a missed probe by the caller
        watch._probe_shell(prober, "echo hi")
    assert prober.session is action.NO_SESSION
    assert watch._probe_shell(prober, "echo hi") == "shelled\n" and watch.shelled == ["echo hi"]


def test_a_probe_still_waiting_when_the_watch_ends_its_session_leaves_the_prober_alone():
    watch = ProbeRoute("local")
    prober = action.Prober()
    watch.__dict__["_prober"] = prober
    assert prober.ask(partial(watch._probe_shell, prober, "echo first"), 5.0) == "first\n"
    late = prober.ask(partial(watch._probe_shell, prober, "sleep 30; echo late"), 0.2)
    assert late is action.MISSED and prober.pending is not None
    watch._end_session()  # the watch returns: the waiting probe gets EOF, a connection failure, in its own thread
    assert prober.pending.wait(5.0) and prober.pending.value() is action.MISSED
    assert prober.session is None  # not NO_SESSION, not a closed session put back
