"""Whether a rank's process group is still alive (module_utils/_job_procs): a zombie is gone."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from ansible_collections.ascend.cluster.plugins.module_utils import _job_procs as procs


def _until(check, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while not check() and time.monotonic() < deadline:
        time.sleep(0.01)
    return check()


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
    leader = subprocess.Popen(
        [sys.executable, "-c", "import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', 'pass']); time.sleep(60)"],
        start_new_session=True,
    )
    try:
        assert _until(
            lambda: any(
                procs.stat_fields(p)[:3][2:] == [str(leader.pid)] and procs.stat_fields(p)[0] == "Z"
                for p in os.listdir("/proc")
                if p.isdigit()
            )
        )
        assert procs.group_alive(leader.pid)  # the leader sleeps on beside its unreaped child
    finally:
        os.killpg(leader.pid, signal.SIGKILL)
        leader.wait()


def test_a_group_whose_leader_is_a_zombie_but_a_member_runs_is_alive():
    """The leader's state answers only when it runs; a dead leader sends the check through the whole group."""
    leader = subprocess.Popen(
        [sys.executable, "-c", "import subprocess, sys, time; subprocess.Popen(['sleep', '60']); time.sleep(60)"],
        start_new_session=True,
    )
    try:
        assert _until(
            lambda: any(procs.stat_fields(p)[2:3] == [str(leader.pid)] for p in os.listdir("/proc") if p.isdigit() and int(p) != leader.pid)
        )
        os.kill(leader.pid, signal.SIGKILL)  # not reaped yet: the leader is a zombie, its sleep runs on
        assert _until(lambda: procs._zombie(leader.pid))
        assert procs.group_alive(leader.pid)
    finally:
        os.killpg(leader.pid, signal.SIGKILL)
        leader.wait()


def test_no_group_is_not_alive():
    assert not procs.group_alive(None)
    assert not procs.group_alive(0)
