"""Restarts (issue 28, the in-place part): a failed job started again on the same servers, with ASCEND_RESTART_COUNT, the
resume command and a backoff; a crash loop, a stop by a person and a detached job are not restarted.

The simulated 2 x 8 cluster; every check reads what the ranks themselves wrote (their state.json, env.log, train.log).
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

from tests.helpers.ansible_cli import run_playbook, start_playbook
from tests.helpers.procs import alive, ctrl_c, reap, wait_for
from tests.helpers.runs import rank_states as read_rank_states

from .conftest import SIM_INVENTORY
from .test_launch_playbooks import STAND_IN, TRAIN, launch_vars

QUIET = {"ANSIBLE_DISPLAY_SKIPPED_HOSTS": "false"}


def wrapper(tmp_path: Path) -> Path:
    """The stand-in, but rank FAIL_RANK fails only on the first attempt (ASCEND_RESTART_COUNT 0): a transient fault."""
    script = tmp_path / "transient.sh"
    script.write_text(
        "#!/usr/bin/env bash\n"
        'echo "restart count ${ASCEND_RESTART_COUNT:-unset}"\n'
        'if [[ "${ASCEND_RESTART_COUNT:-}" != 0 ]]; then unset FAIL_RANK; fi\n'
        f'exec bash {STAND_IN} "$@"\n'
    )
    return script


def attempt_states(cluster, job_id: str) -> dict:
    return read_rank_states(cluster.root / "runs" / job_id)


def summary_of(cluster, job_id: str) -> dict:
    return json.loads((cluster.root / "controller" / job_id / "summary.json").read_text())


def test_a_transient_rank_failure_restarts_in_place_and_the_job_succeeds(sim_cluster, tmp_path):
    cluster = sim_cluster()
    env = {"FAIL_RANK": "3", "FAIL_STEP": "2", "STEPS": "4", "STEP_S": "0.1"}
    extra = launch_vars(
        cluster,
        np=16,
        ascend_job_id="t1",
        ascend_train_env=env,
        train_command=f"bash {wrapper(tmp_path)} --data_path=/data",
        resume_command=f"bash {wrapper(tmp_path)} --data_path=/data --resume",
        max_restarts=2,
    )
    res = run_playbook(TRAIN, SIM_INVENTORY, extra_vars=extra, env=QUIET)
    assert res.rc == 0, res
    first, second = attempt_states(cluster, "t1"), attempt_states(cluster, "t1-r1")
    assert first[3]["rc"] == 1 and all(s["rc"] in (-15, -9) for r, s in first.items() if r != 3), first
    assert all(s["phase"] == "exited" and s["rc"] == 0 for s in second.values()), second
    assert not (cluster.root / "runs" / "t1-r2").exists()
    # every rank of each attempt was told its attempt; the restart ran the resume command
    for rank in (0, 3, 15):
        assert "ASCEND_RESTART_COUNT=0" in (cluster.root / "runs" / "t1" / f"device_{rank}" / "env.log").read_text()
        assert "ASCEND_RESTART_COUNT=1" in (cluster.root / "runs" / "t1-r1" / f"device_{rank}" / "env.log").read_text()
        log = (cluster.root / "runs" / "t1-r1" / f"device_{rank}" / "train.log").read_text()
        assert "restart count 1" in log and "args: --data_path=/data --resume" in log, log
    assert "--resume" not in (cluster.root / "runs" / "t1" / "device_0" / "train.log").read_text()
    assert "restart 1 of 2: on the same servers" in res.stdout, res
    summary = summary_of(cluster, "t1-r1")
    assert summary["ok"] is True, summary
    assert summary["line"].startswith("train t1-r1: 16/16 ranks done in ") and " after 1 restart (t1: rank 3 exit 1; " in summary["line"]
    (attempt,) = summary["attempts"]
    assert attempt["job_id"] == "t1" and attempt["rank_id"] == 3 and attempt["cause"] == "exit 1" and attempt["left_out"] == []
    # from the failure to every rank of the next attempt started: measured (recovery_in_place_s, docs/benchmarks.md) on an
    # idle machine; here only bounded, the suite loads this one
    assert 0 < attempt["restart_s"] < 60, attempt
    assert summary["line"] in res.stdout


def test_the_same_rank_failing_the_same_way_twice_ends_the_job_as_a_crash_loop(sim_cluster):
    cluster = sim_cluster()
    env = {"FAIL_RANK": "5", "FAIL_STEP": "2", "STEPS": "4", "STEP_S": "0.1"}
    extra = launch_vars(cluster, np=16, ascend_job_id="c1", ascend_train_env=env, max_restarts=3)
    res = run_playbook(TRAIN, SIM_INVENTORY, extra_vars=extra, env=QUIET)
    assert res.rc != 0, res
    assert (cluster.root / "runs" / "c1-r1").exists() and not (cluster.root / "runs" / "c1-r2").exists()
    assert "not restarted: a crash loop - rank 5 failed again with the same cause (exit 1)" in res.stdout, res
    summary = summary_of(cluster, "c1-r1")
    assert summary["ok"] is False and [a["job_id"] for a in summary["attempts"]] == ["c1"], summary
    assert "FAILED: train c1-r1: rank 5 " in summary["line"] and " after 1 restart (c1: rank 5 exit 1; " in summary["line"]
    states = attempt_states(cluster, "c1-r1")
    assert not any(alive(p) for s in states.values() for p in (s["pid"], s["runner_pid"])), states


def test_no_restart_is_left_after_max_restarts(sim_cluster, tmp_path):
    cluster = sim_cluster()
    # a different last line each time (the step it fails at grows with the attempt): not a crash loop, just out of restarts
    script = tmp_path / "later.sh"
    script.write_text(f'#!/usr/bin/env bash\nFAIL_STEP=$((2 + ASCEND_RESTART_COUNT)) exec bash {STAND_IN} "$@"\n')
    env = {"FAIL_RANK": "3", "STEPS": "6", "STEP_S": "0.05"}
    extra = launch_vars(cluster, np=4, ascend_job_id="m1", ascend_train_env=env, train_command=f"bash {script}", max_restarts=1)
    res = run_playbook(TRAIN, SIM_INVENTORY, extra_vars=extra, env=QUIET)
    assert res.rc != 0, res
    assert sorted(p.name for p in (cluster.root / "runs").iterdir()) == ["m1", "m1-r1"]
    assert "all 1 restart(s) were used" in res.stdout, res


def test_max_restarts_is_refused_for_a_detached_job(sim_cluster):
    cluster = sim_cluster()
    res = run_playbook(TRAIN, SIM_INVENTORY, extra_vars=launch_vars(cluster, np=4, wait=False, max_restarts=1), env=QUIET)
    assert res.rc != 0, res
    assert "max_restarts needs the job watched: a job launched with wait=false" in res.stdout, res
    assert not (cluster.root / "runs").exists() or not any((cluster.root / "runs").iterdir())


def test_ctrl_c_while_a_restart_waits_stops_everything_and_starts_nothing_more(sim_cluster, tmp_path):
    cluster = sim_cluster()
    env = {"FAIL_RANK": "3", "FAIL_STEP": "2", "STEPS": "400", "STEP_S": "0.1"}
    extra = launch_vars(cluster, np=16, ascend_job_id="b1", ascend_train_env=env, max_restarts=2, restart_backoff_s=60)
    output = tmp_path / "train.out"
    with open(output, "a") as out:
        proc = start_playbook(TRAIN, SIM_INVENTORY, extra, out)
    try:
        wait_for(lambda: "Wait restart_backoff_s before the next attempt" in output.read_text(), 240, "the restart's backoff")
        time.sleep(0.5)
        ctrl_c(proc)
    finally:
        reap(proc)
    text = output.read_text()
    assert proc.returncode != 0, text
    assert "in 60 s)" in text, text
    assert not (cluster.root / "runs" / "b1-r1").exists(), text  # the next attempt never started
    states = attempt_states(cluster, "b1")
    assert not any(alive(p) for s in states.values() for p in (s["pid"], s["runner_pid"])), states


def test_a_restarted_job_resumes_from_its_checkpoint_and_ends_at_the_right_step(sim_cluster, tmp_path):
    """The stand-in's checkpoint (rank 0 writes the step every 3 steps; every rank reads the newest earlier attempt's at
    start): rank 3 fails once at step 9, the restart resumes every rank from rank 0's last checkpoint (step 6, or 9: the
    stand-in's ranks do not wait for each other), and the job ends at step 10."""
    cluster = sim_cluster()
    checkpoints = tmp_path / "checkpoints"
    checkpoints.mkdir()
    env = {
        "STEPS": "10",
        "STEP_S": "0.2",
        "FAIL_RANK": "3",
        "FAIL_STEP": "9",
        "FAIL_ONCE_FILE": str(tmp_path / "failed-once"),
        "CHECKPOINT_DIR": str(checkpoints),
        "CHECKPOINT_EVERY": "3",
    }
    res = run_playbook(
        TRAIN, SIM_INVENTORY, extra_vars=launch_vars(cluster, np=16, ascend_job_id="k1", ascend_train_env=env, max_restarts=1), env=QUIET
    )
    assert res.rc == 0, res
    assert attempt_states(cluster, "k1")[3]["rc"] == 1
    resumed = set()
    for rank in range(16):
        log = (cluster.root / "runs" / "k1-r1" / f"device_{rank}" / "train.log").read_text()
        found = re.search(r"^resumed from step (\d+) \(checkpoint ", log, re.M)
        assert found and log.rstrip().endswith("step 10 loss 100"), log
        step = int(found.group(1))
        resumed.add(step)
        # from the step after the checkpoint, nothing done twice
        assert f"step {step + 1} loss" in log and f"step {step} loss" not in log, log
    # one step for every rank, rank 0's last checkpoint before rank 3 failed: 6, or 9 when rank 0 got there first
    assert len(resumed) == 1 and resumed <= {6, 9}, resumed
    assert summary_of(cluster, "k1-r1")["ok"] is True
