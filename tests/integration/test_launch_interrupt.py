"""An operator's Ctrl-C (and SIGTERM) to ascend.cluster.train on the simulated 2 x 8 cluster.

ansible-playbook runs in its own process group and gets SIGINT the way a terminal sends it: to
that group (Ansible's workers are in sessions of their own and see it only through the main
process). Every check reads what the ranks themselves wrote (state.json) and their processes.
"""

from __future__ import annotations

import fcntl
import os
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.helpers.ansible_cli import run_playbook
from tests.helpers.procs import alive, wait_for

from .conftest import SIM_INVENTORY
from .test_launch_playbooks import LONG_RUN, STATUS, STOP, TRAIN, Played, launch_vars, rank_states, running


def watched(cluster, job_id: str, count: int, played: Played) -> bool:
    """``count`` ranks running and the job's watch at work: it keeps the group's view on the controller once it has read
    it (its Ctrl-C handling is in place by then)."""
    return running(cluster, job_id, count) and (cluster.root / "controller" / job_id / "group.json").exists()


@contextmanager
def watched_train(cluster, tmp_path: Path, job_id: str, **more) -> Iterator[Played]:
    """train.yml of job ``job_id`` (16 ranks, LONG_RUN, ``more`` vars) until its ranks run and its watch is at work;
    the play is ended (killed if it has not ended) when the block does."""
    played = Played(tmp_path, launch_vars(cluster, np=16, ascend_job_id=job_id, ascend_train_env=LONG_RUN, **more))
    try:
        wait_for(lambda: watched(cluster, job_id, 16, played), 240, "16 ranks running and watched")
        yield played
    finally:
        played.finish()


def locks_free(cluster) -> None:
    for server in ("server0", "server1"):
        for lock in (cluster.root / server / "locks").glob("*.lock"):
            with open(lock) as handle:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)  # raises if any rank still holds it


def test_ctrl_c_stops_every_rank_names_the_cause_and_a_new_train_starts_at_once(sim_cluster, tmp_path):
    cluster = sim_cluster()
    with watched_train(cluster, tmp_path, "j1") as played:
        played.ctrl_c()
        played.proc.wait(timeout=120)
    text = played.failed()
    assert "[j1] Ctrl-C on the controller: stopping job j1 on 2 server(s) - press Ctrl-C again within 1 s to leave it running" in text
    # one line for the whole job, as its group confirmed it (every server's ranks stopped through the group)
    assert "[j1] Ctrl-C on the controller: job j1: 16 rank(s) on 2 server(s) stopped, their devices are free" in text, text
    states = rank_states(cluster, "j1")
    assert all(s["rc"] in (-15, -9) and "Ctrl-C on the controller (ansible-playbook of " in s["stopped_by"] for s in states.values()), (
        states
    )
    assert not any(alive(p) for s in states.values() for p in (s["pid"], s["runner_pid"]))
    locks_free(cluster)
    again = run_playbook(TRAIN, SIM_INVENTORY, extra_vars=launch_vars(cluster, np=16, ascend_job_id="j2", ascend_train_env={"STEPS": "1"}))
    assert again.rc == 0, again


def test_a_second_ctrl_c_leaves_the_job_running_and_prints_status_and_stop(sim_cluster, tmp_path):
    cluster = sim_cluster()
    with watched_train(cluster, tmp_path, "k1") as played:
        played.ctrl_c()
        wait_for(lambda: "press Ctrl-C again" in played.text(), 30, "the first Ctrl-C's prompt")
        played.ctrl_c()
        played.proc.wait(timeout=60)
        wait_for(lambda: "stop it:" in played.text(), 30, "the stop command")
    text = played.failed()
    assert "[k1] Ctrl-C twice on the controller: job k1 left running on 2 server(s), not watched any more." in text, text
    assert f"follow it: ansible-playbook ascend.cluster.status -i {SIM_INVENTORY} -e job_id=k1" in text, text
    assert f"stop it:   ansible-playbook ascend.cluster.stop -i {SIM_INVENTORY} -e job_id=k1" in text, text
    states = rank_states(cluster, "k1")
    assert all(s["phase"] == "running" and alive(s["pid"]) for s in states.values()), states
    status = run_playbook(STATUS, SIM_INVENTORY, extra_vars=launch_vars(cluster, job_id="k1"))
    assert status.rc == 0 and "status k1: 16 running" in status.stdout, status
    stop = run_playbook(STOP, SIM_INVENTORY, extra_vars=launch_vars(cluster, job_id="k1"))
    assert stop.rc == 0, stop
    states = rank_states(cluster, "k1")
    assert not any(alive(p) for s in states.values() for p in (s["pid"], s["runner_pid"]))
    locks_free(cluster)


def test_detach_on_interrupt_leaves_the_job_running_on_the_first_ctrl_c(sim_cluster, tmp_path):
    cluster = sim_cluster()
    with watched_train(cluster, tmp_path, "d1", detach_on_interrupt=True) as played:
        played.ctrl_c()
        played.proc.wait(timeout=60)
    text = played.failed()
    assert "press Ctrl-C again" not in text, text
    assert "[d1] Ctrl-C on the controller: job d1 left running on 2 server(s), not watched any more." in text, text
    assert f"stop it:   ansible-playbook ascend.cluster.stop -i {SIM_INVENTORY} -e job_id=d1" in text, text
    states = rank_states(cluster, "d1")
    assert all(s["phase"] == "running" and alive(s["pid"]) for s in states.values()), states
    stop = run_playbook(STOP, SIM_INVENTORY, extra_vars=launch_vars(cluster, job_id="d1"))
    assert stop.rc == 0, stop
    assert not any(alive(s["pid"]) for s in rank_states(cluster, "d1").values())
    locks_free(cluster)


def staging_held(cluster, tmp_path: Path, job_id: str) -> tuple:
    """train.yml started and held in its staging wait: rank 3 (server0, device 3) stays in "staging" - its env.log is a
    FIFO nobody reads yet - while 15 ranks sit at the gate. ``(played, rank 3's directory)``; opening its env.log for
    reading lets rank 3 stage."""
    rank3 = cluster.root / "runs" / job_id / "device_3"
    rank3.mkdir(parents=True)
    os.mkfifo(rank3 / "env.log")
    played = Played(tmp_path, launch_vars(cluster, np=16, ascend_job_id=job_id, ascend_train_env=LONG_RUN))
    try:
        wait_for(
            lambda: (
                sum(s.get("phase") == "staged" for s in rank_states(cluster, job_id).values()) == 15
                and "Wait until every rank on every server is staged" in played.text()
            ),
            240,
            "15 ranks at the gate, the launch waiting for the 16th",
        )
    except BaseException:
        os.close(os.open(rank3 / "env.log", os.O_RDONLY | os.O_NONBLOCK))
        played.finish()
        raise
    return played, rank3


def test_a_controller_killed_while_the_launch_stages_leaves_a_job_that_status_shows_and_stop_releases(sim_cluster, tmp_path):
    """Issue 25 item 1: the controller killed -9 while the launch stages, one rank still staging (it never gets through:
    the gate can never open), leaves 16 runners holding their devices until the gate time-out. The job never became
    latest, yet status and stop with the default job_id find it: status shows its ranks staged, stop releases them
    instead of saying there is nothing to stop."""
    cluster = sim_cluster()
    played, rank3 = staging_held(cluster, tmp_path, "k9")  # rank 3 stays in staging until the stop
    try:
        os.kill(played.proc.pid, signal.SIGKILL)  # ansible-playbook itself, as the OOM killer or a scheduler would
        played.proc.wait(timeout=30)
        for server in ("server0", "server1"):
            assert not (cluster.root / server / "jobs" / "latest").exists()  # the gate never opened: not latest
        status = run_playbook(STATUS, SIM_INVENTORY, extra_vars=launch_vars(cluster))
        assert status.rc == 0 and "status k9: 16 staged (waiting at a gate that has not opened: " in status.stdout, status
        stop = run_playbook(STOP, SIM_INVENTORY, extra_vars=launch_vars(cluster))
        assert stop.rc == 0 and "stop: job k9: stopped 16 rank(s) on 2 server(s)" in stop.stdout, stop
    finally:
        reader = os.open(rank3 / "env.log", os.O_RDONLY | os.O_NONBLOCK)  # rank 3 gets through staging, finds the stop
        played.finish()
    wait_for(lambda: not any(alive(s["runner_pid"]) for s in rank_states(cluster, "k9").values()), 30, "every runner to end")
    os.close(reader)
    states = rank_states(cluster, "k9")
    assert all(s["phase"] == "aborted" and "stopped by ascend.cluster.stop" in s["stopped_by"] for s in states.values()), states
    locks_free(cluster)  # every device free, without waiting for the gate time-out


def test_sigterm_stops_every_rank_at_once_and_says_so_in_one_line_for_the_job(sim_cluster, tmp_path):
    """Issue 25 item 5: a scheduler's SIGTERM to ansible-playbook stops the job through its group without the Ctrl-C
    window, and the operator reads one line for the whole job (before, only one server's stop line reached the output)."""
    cluster = sim_cluster()
    with watched_train(cluster, tmp_path, "t1") as played:
        os.killpg(played.proc.pid, signal.SIGTERM)
        played.proc.wait(timeout=120)
        # ansible-playbook kills itself as soon as it has passed the SIGTERM on; its watch goes on in its worker, stops
        # the job through the group, and writes its line to the output ansible-playbook had (held open since the start)
        wait_for(lambda: "[t1] SIGTERM to the controller: job t1: " in played.text(), 60, "the watch's line")
    text = played.failed()
    assert "press Ctrl-C again" not in text, text
    assert text.count("[t1] SIGTERM to the controller: job t1: ") == 1, text
    assert "[t1] SIGTERM to the controller: job t1: 16 rank(s) on 2 server(s) stopped, their devices are free" in text, text
    states = rank_states(cluster, "t1")
    assert all(s["rc"] in (-15, -9) and "SIGTERM to the controller (ansible-playbook of " in s["stopped_by"] for s in states.values()), (
        states
    )
    locks_free(cluster)
