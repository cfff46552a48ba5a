"""More servers than Ansible's default forks: the simulated cluster at 8 servers x 2 NPUs with forks=5.

Until the job watched itself, a watched job was followed by one task per server and only ``forks`` of them ran at
once: a crash stopped the ranks of the servers being watched, the other servers' ranks ran to the end, and the play
still said every rank was stopped. Here every check reads what the ranks themselves wrote (state.json) and their
processes: every rank of every server must end within a second of the failure, watched or not (issue 24: crash,
detached crash, stall and Ctrl-C at 8 servers with forks=5; over SSH the 8-host bed, tests/testbed/test_group_bed.py).
"""

from __future__ import annotations

import fcntl
import os
import re
import signal
import time

from tests.helpers.ansible_cli import run_playbook, start_playbook
from tests.helpers.procs import alive, ctrl_c, reap, wait_for

from .test_launch_playbooks import STATUS, TRAIN, launch_vars, rank_states

SERVERS = 8
FORKS = {"ANSIBLE_FORKS": "5"}  # Ansible's default, stated: the tests must not depend on the machine's ansible.cfg
LONG_RUN = {"STEPS": "200", "STEP_S": "0.2"}
FAILFAST_S = 1.0  # issue 24: failfast_s_8x2_forks5 and failfast_s_detached_8x2 <= 1 s


def task_section(stdout: str, name: str) -> str:
    """What the default callback printed under the task whose name contains ``name``."""
    head = stdout.index(name)
    return stdout[stdout.index("\n", head) + 1 :].lstrip("\n").split("\nTASK [", 1)[0]


def assert_each_task_header_once(stdout: str) -> None:
    """Issue 27: the default callback prints the same TASK headers whatever the number of servers - none once per server
    (as a meta task's header is printed, for each server it is judged for)."""
    headers = re.findall(r"^TASK \[(.*)\] \**$", stdout, re.M)
    twice = sorted({h for h in headers if headers.count(h) > 1})
    assert headers and not twice, f"TASK headers printed more than once: {twice}"


def eight_servers(sim_cluster):
    cluster = sim_cluster(servers=SERVERS, devices=2)
    return cluster, cluster.inventory()


def assert_every_rank_ended_soon_after(states: dict, failed: int, within: float) -> None:
    """Every rank ended (and its processes are gone) within ``within`` s of rank ``failed``'s end."""
    crash = states[failed]["ended"]
    late = {r: round(s["ended"] - crash, 3) for r, s in states.items() if s["ended"] - crash > within}
    assert not late, f"ranks that ended more than {within} s after rank {failed}: {late}"
    assert not any(alive(p) for s in states.values() for p in (s["pid"], s["runner_pid"])), states


def test_a_crash_beyond_forks_stops_every_rank_on_every_server_within_a_second(sim_cluster):
    cluster, inventory = eight_servers(sim_cluster)
    crash = dict(LONG_RUN, FAIL_RANK="15", FAIL_STEP="4")
    res = run_playbook(TRAIN, inventory, extra_vars=launch_vars(cluster, np=16, ascend_train_env=crash), env=FORKS)
    assert res.rc != 0, res
    assert "rank 15 (server 127.0.1.8, device 1) failed first: exit code 1; every rank was stopped." in res.stdout, res
    assert "FAILED: train " in res.stdout and ": rank 15 (server 127.0.1.8, device 1) exit 1; 15 stopped" in res.stdout, res
    states = rank_states(cluster)
    assert sorted(states) == list(range(16)) and states[15]["rc"] == 1
    assert all(s["rc"] in (-15, -9) and "rank 15 failed (rc=1)" in s["stopped_by"] for r, s in states.items() if r != 15), states
    assert_every_rank_ended_soon_after(states, 15, FAILFAST_S)


def test_a_stalled_rank_beyond_forks_is_named_and_every_rank_stops(sim_cluster):
    """Issue 24: rank 15, on the last of 8 servers, stops printing (as a rank hung in a collective does); with forks=5 the
    job is still stopped within seconds of the stall timeout, naming its silence and last line."""
    cluster, inventory = eight_servers(sim_cluster)
    env = {"STALL_RANK": "15", "STALL_STEP": "3", "STEPS": "400", "STEP_S": "0.1"}
    res = run_playbook(TRAIN, inventory, extra_vars=launch_vars(cluster, np=16, stall_timeout_s=3, ascend_train_env=env), env=FORKS)
    assert res.rc != 0, res
    why = r'stalled: no progress for [34] s; last line: "step 2 loss 500"'
    assert re.search(rf"rank 15 \(server 127\.0\.1\.8, device 1\) {why}; 15 stopped\n", res.stdout), res  # the summary line
    states = rank_states(cluster)
    assert states[15]["stalled"]["last_line"] == "step 2 loss 500" and states[15]["stalled"]["silent_s"] >= 3
    assert all(s["rc"] in (-15, -9) and s["stopped_by"] for r, s in states.items() if r != 15), states
    assert not any(alive(p) for s in states.values() for p in (s["pid"], s["runner_pid"])), states
    # noticed 3-4 s after its last step, every rank gone soon after, not after HCCL_EXEC_TIMEOUT
    assert max(s["ended"] for s in states.values()) - states[15]["started"] < 20, states


def test_a_detached_job_stops_every_rank_when_one_fails_without_any_controller(sim_cluster):
    cluster, inventory = eight_servers(sim_cluster)
    crash = dict(LONG_RUN, FAIL_RANK="15", FAIL_STEP="10")
    res = run_playbook(TRAIN, inventory, extra_vars=launch_vars(cluster, np=16, wait=False, ascend_train_env=crash), env=FORKS)
    assert res.rc == 0, res  # launched and left: no watch, no controller from here on
    assert_each_task_header_once(res.stdout)
    wait_for(lambda: all(s.get("phase") == "exited" for s in rank_states(cluster).values()), 60, "every rank to end")
    states = rank_states(cluster)
    assert states[15]["rc"] == 1 and all(s["rc"] in (-15, -9) for r, s in states.items() if r != 15), states
    assert_every_rank_ended_soon_after(states, 15, FAILFAST_S)
    status = run_playbook(STATUS, inventory, extra_vars=launch_vars(cluster), env=FORKS)
    assert status.rc == 0 and "1 failed, 15 stopped" in status.stdout, status


def test_ctrl_c_beyond_forks_stops_every_rank_through_the_group(sim_cluster, tmp_path):
    cluster, inventory = eight_servers(sim_cluster)
    output = tmp_path / "train.out"
    with open(output, "a") as out:
        proc = start_playbook(TRAIN, inventory, launch_vars(cluster, np=16, ascend_job_id="c8", ascend_train_env=LONG_RUN), out, env=FORKS)
    try:
        wait_for(
            lambda: (
                # the watch keeps the group's view on the controller once it has read it: its Ctrl-C handling is in place
                # (its TASK header is printed before its worker runs; a Ctrl-C before then reaches no collection code)
                (cluster.root / "controller" / "c8" / "group.json").exists()
                and sum(s.get("phase") == "running" for s in rank_states(cluster, "c8").values()) == 16
            ),
            240,
            "16 ranks running and watched",
        )
        sent = time.time()
        ctrl_c(proc)
    finally:
        reap(proc)
    text = output.read_text()
    assert proc.returncode != 0, text
    assert "[c8] Ctrl-C on the controller: job c8: 16 rank(s) on 8 server(s) stopped, their devices are free" in text, text
    states = rank_states(cluster, "c8")
    assert all(s["rc"] in (-15, -9) and "Ctrl-C on the controller (ansible-playbook of " in s["stopped_by"] for s in states.values()), (
        states
    )
    # the 1 s window for a second Ctrl-C, then every rank of every server gone within a second
    assert max(s["ended"] for s in states.values()) - sent < 1.0 + 1.0 + FAILFAST_S, states
    assert not any(alive(p) for s in states.values() for p in (s["pid"], s["runner_pid"])), states


def test_ctrl_c_while_a_later_batch_stages_releases_every_server_with_one_line(sim_cluster, tmp_path):
    """Issue 25 item 1: with fewer forks than servers, the stage tasks of the first servers have ended when the last one
    stages. A Ctrl-C then must still release every server's staged runners at once (not leave them to the gate time-out)
    and say one line for the job, as a Ctrl-C while it runs does: the coordinator host's stage task (the anchor) is still
    running and does it through the job's group."""
    cluster, inventory = eight_servers(sim_cluster)
    held = cluster.root / "runs" / "s8" / "device_15"  # rank 15, on the last server: its env.log is a FIFO nobody reads yet
    held.mkdir(parents=True)
    os.mkfifo(held / "env.log")
    output = tmp_path / "train.out"
    with open(output, "a") as out:
        proc = start_playbook(TRAIN, inventory, launch_vars(cluster, np=16, ascend_job_id="s8", ascend_train_env=LONG_RUN), out, env=FORKS)
    reader = None
    try:
        wait_for(
            lambda: (
                sum(s.get("phase") == "staged" for s in rank_states(cluster, "s8").values()) == 15
                and output.read_text().count("changed: [server") >= 6
            ),  # servers 1-6's stage tasks ended (server0's waits)
            240,
            "15 ranks at the gate and the stage tasks of servers 1-6 ended",
        )
        sent = time.time()
        os.killpg(proc.pid, signal.SIGINT)
        # once the stop is recorded on server7, rank 15 may stage: it finds the job stopped
        wait_for((cluster.root / "server7" / "jobs" / "s8" / "abort").exists, 60, "the stop recorded on server7")
        reader = os.open(held / "env.log", os.O_RDONLY | os.O_NONBLOCK)
        proc.wait(timeout=60)
    finally:
        reader = reader if reader is not None else os.open(held / "env.log", os.O_RDONLY | os.O_NONBLOCK)
        reap(proc)
    text = output.read_text()
    assert proc.returncode != 0, text
    assert "[s8] Ctrl-C on the controller: job s8: 16 rank(s) on 8 server(s) stopped, their devices are free" in text, text
    assert "released on server" not in text, text  # one line for the job, none per server
    wait_for(lambda: all(s.get("phase") == "aborted" for s in rank_states(cluster, "s8").values()), 30, "every rank aborted")
    states = rank_states(cluster, "s8")
    assert all("Ctrl-C on the controller during the launch (ansible-playbook of " in s["stopped_by"] for s in states.values()), states
    # released at once, not at the gate time-out (600 s)
    assert max(s["ended"] for s in states.values()) - sent < 10, states
    wait_for(lambda: not any(alive(s["runner_pid"]) for s in rank_states(cluster, "s8").values()), 30, "every runner to end")
    os.close(reader)
    for lock in cluster.root.glob("server*/locks/*.lock"):
        with open(lock) as handle:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)  # raises if a rank still holds its device
    # the job never started: latest does not name it (status and stop default to latest)
    for server in range(SERVERS):
        latest = cluster.root / f"server{server}" / "jobs" / "latest"
        assert not latest.exists() or latest.read_text().strip() != "s8"
    assert not (cluster.root / "controller" / "latest").exists()


def test_with_one_fork_the_launch_gate_task_opens_the_gate(sim_cluster):
    """forks=1: no stage task can hold the launch open for the others (it would hold the only worker), so the launch's own
    gate task waits for the group's gate; the job runs and ends as with any forks."""
    cluster = sim_cluster(servers=2, devices=2)
    res = run_playbook(
        TRAIN, cluster.inventory(), extra_vars=launch_vars(cluster, np=4, ascend_train_env={"STEPS": "2"}), env={"ANSIBLE_FORKS": "1"}
    )
    assert res.rc == 0, res
    assert task_section(res.stdout, "Wait for the job's group to open the gate").startswith("changed: [server0"), res
    default = run_playbook(TRAIN, cluster.inventory(), extra_vars=launch_vars(cluster, np=4, ascend_train_env={"STEPS": "2"}), env=FORKS)
    assert default.rc == 0, default
    # with forks=5 the coordinator host's stage task waited for the gate itself (it held the launch open): nothing left to do
    assert task_section(default.stdout, "Wait for the job's group to open the gate").startswith("skipping: [server0]"), default
    assert_each_task_header_once(default.stdout)
    states = rank_states(cluster)
    assert sorted(states) == [0, 1, 2, 3] and all(s["phase"] == "exited" and s["rc"] == 0 for s in states.values()), states
    assert max(s["started"] for s in states.values()) - min(s["started"] for s in states.values()) < 0.5, states
