"""Whether a rank's process group is still alive (module_utils/_job/procs): a zombie is gone."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from ansible_collections.ascend.cluster.plugins.module_utils._job import procs


def _until(check, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while not check() and time.monotonic() < deadline:
        time.sleep(0.01)
    return check()


@contextmanager
def leader_and_member(member: str, state: str | None = None) -> Iterator[subprocess.Popen]:
    """A new session's leader that started ``member`` (an argv as Python source) and sleeps on; it is yielded once
    a member of its group besides it shows in /proc (in ``state``, when given). The whole group is killed after."""
    leader = subprocess.Popen(
        [sys.executable, "-c", f"import subprocess, sys, time; subprocess.Popen({member}); time.sleep(60)"], start_new_session=True
    )

    def member_seen() -> bool:
        for name in os.listdir("/proc"):
            fields = procs.stat_fields(name) if name.isdigit() and int(name) != leader.pid else []
            if fields[2:3] == [str(leader.pid)] and state in (None, fields[0]):
                return True
        return False

    try:
        assert _until(member_seen)
        yield leader
    finally:
        os.killpg(leader.pid, signal.SIGKILL)
        leader.wait()


def test_a_group_whose_only_process_is_a_zombie_is_not_alive():
    """A training killed while nobody reaps it (its runner frozen or gone) still answers killpg(0): it is gone all the same."""
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)
    try:
        assert procs.group_alive(child.pid)
        os.killpg(child.pid, signal.SIGKILL)  # not reaped yet: a zombie of this process
        assert _until(lambda: procs._zombie(child.pid))
        os.killpg(child.pid, 0)  # the group still answers signals ...
        assert not procs.group_alive(child.pid)  # ... but nothing in it runs
        assert not procs.pid_alive(child.pid)
    finally:
        child.kill()
        child.wait()
    assert not procs.group_alive(child.pid)  # reaped: no group at all


def test_a_group_with_one_live_process_beside_a_zombie_is_alive():
    with leader_and_member("[sys.executable, '-c', 'pass']", state="Z") as leader:  # its child ended, not reaped
        assert procs.group_alive(leader.pid)  # the leader sleeps on beside its unreaped child


def test_a_group_whose_leader_is_a_zombie_but_a_member_runs_is_alive():
    """The leader's state answers only when it runs; a dead leader sends the check through the whole group."""
    with leader_and_member("['sleep', '60']") as leader:
        os.kill(leader.pid, signal.SIGKILL)  # not reaped yet: the leader is a zombie, its sleep runs on
        assert _until(lambda: procs._zombie(leader.pid))
        assert procs.group_alive(leader.pid)


def test_no_group_is_not_alive():
    assert not procs.group_alive(None)
    assert not procs.group_alive(0)


@pytest.mark.parametrize("error, alive", [(ProcessLookupError, False), (PermissionError, True)])
def test_signal_0s_answer_decides_for_a_process_and_a_group_alike(monkeypatch, error, alive):
    """No such process (group): gone. Another user's: alive, whatever /proc says (not ours to judge)."""

    def refuse(_target, _signum):
        raise error()

    monkeypatch.setattr(procs, "_zombie", lambda _pid: True)
    monkeypatch.setattr(procs, "_only_zombies", lambda _pgid: True)
    monkeypatch.setattr(procs.os, "kill", refuse)
    monkeypatch.setattr(procs.os, "killpg", refuse)
    assert procs.pid_alive(4242) is alive
    assert procs.group_alive(4242) is alive
