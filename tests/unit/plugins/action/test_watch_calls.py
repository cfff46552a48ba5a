"""The training watch's calls to a server run with a deadline (plugins/action/training_watch.call_within).

A dead server's connection can hang for minutes; the watcher must count such a call as missed
after its deadline, and the same for a call that cannot connect at all.
"""

from __future__ import annotations

import threading

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
