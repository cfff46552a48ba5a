"""Restarts that leave a server out (issue 28): on a simulated 3-server cluster, a crash whose server the diagnosis
finds at fault (its device's link DOWN) is left out and the spare (inventory group ascend_spares) takes its place with
the same np; without a spare, min_np lets the job run smaller, and without min_np it ends naming the server.

Every check reads what the ranks themselves wrote (their state.json, env.log, train.log) and the summaries.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from tests.helpers.ansible_cli import run_playbook
from tests.helpers.procs import alive
from tests.helpers.runs import rank_states

from .conftest import ASCEND_SIM, SIM_INVENTORY
from .test_launch_playbooks import STAND_IN, STATUS, TRAIN, launch_vars
from .test_launch_restarts import QUIET, summary_of


def link_fault(tmp_path: Path, rank: int) -> Path:
    """The stand-in, but on the first attempt rank ``rank`` takes its device's link DOWN (its server's simulator) and
    exits 1: a crash the diagnosis puts on that server."""
    script = tmp_path / "link_fault.sh"
    script.write_text(
        "#!/usr/bin/env bash\n"
        f'if [[ "${{ASCEND_RESTART_COUNT:-}}" == 0 && "$RANK_ID" == {rank} ]]; then\n'
        "  sleep 0.5\n"
        f'  {sys.executable} {ASCEND_SIM} fault --state "$ASCEND_SIM_STATE" link --device "$DEVICE_ID" --down\n'
        '  echo "rank $RANK_ID: the link went down"; exit 1\n'
        "fi\n"
        f'exec bash {STAND_IN} "$@"\n'
    )
    return script


def spares_inventory(cluster) -> Path:
    """server0 and server1 in group ascend, server2 in ascend_spares (a child of ascend: the same group_vars)."""
    path = cluster.inventory()
    ids = {s.name: {"ascend_server_id": f"127.0.1.{i + 1}"} for i, s in enumerate(cluster.servers)}
    path.write_text(
        json.dumps(
            {
                "ascend": {
                    "vars": {"ascend_sim_root": str(cluster.root)},
                    "hosts": {"server0": ids["server0"], "server1": ids["server1"]},
                    "children": {"ascend_spares": {"hosts": {"server2": ids["server2"]}}},
                }
            }
        )
    )
    return path


def nothing_left(cluster, *jobs: str) -> None:
    for job in jobs:
        states = rank_states(cluster.root / "runs" / job)
        assert not any(alive(p) for s in states.values() for p in (s["pid"], s["runner_pid"])), (job, states)


def test_a_server_at_fault_is_left_out_and_the_spare_takes_its_place(sim_cluster, tmp_path):
    cluster = sim_cluster(servers=3)
    checkpoints = tmp_path / "checkpoints"
    checkpoints.mkdir()
    env = {"STEPS": "8", "STEP_S": "0.2", "CHECKPOINT_DIR": str(checkpoints), "CHECKPOINT_EVERY": "2"}
    extra = launch_vars(
        cluster, np=16, ascend_job_id="s1", ascend_train_env=env, train_command=f"bash {link_fault(tmp_path, 11)}", max_restarts=1
    )
    res = run_playbook(TRAIN, spares_inventory(cluster), extra_vars=extra, env=QUIET)
    assert res.rc == 0, res
    first, second = rank_states(cluster.root / "runs" / "s1"), rank_states(cluster.root / "runs" / "s1-r1")
    assert first[11]["rc"] == 1 and sorted(second) == list(range(16)), second
    assert all(s["rc"] == 0 for s in second.values()), second
    # the spare did nothing on the first attempt (no job record there) and runs ranks 8-15 now; server1 none
    assert not (cluster.root / "server2" / "jobs" / "s1").exists()
    assert (cluster.root / "server2" / "jobs" / "s1-r1").exists() and not (cluster.root / "server1" / "jobs" / "s1-r1").exists()
    table = json.loads((cluster.root / "runs" / "s1-r1" / "rank_table.json").read_text())
    assert [s["server_id"] for s in table["server_list"]] == ["127.0.1.1", "127.0.1.3"], table
    for rank in (0, 8, 15):
        log = (cluster.root / "runs" / "s1-r1" / f"device_{rank}" / "train.log").read_text()
        assert re.search(r"^resumed from step 0 \(checkpoint |^no checkpoint in ", log, re.M) or "resumed from step" in log, log
    assert "server1 (server1 eth3 link DOWN - check the optics/cable) left out, replaced by server2" in res.stdout, res
    summary = summary_of(cluster, "s1-r1")
    (attempt,) = summary["attempts"]
    assert attempt["left_out"] == ["server1"] and attempt["taken_in"] == ["server2"] and attempt["np"] == 16, attempt
    assert re.search(r" after 1 restart \(server1 at fault at \d\d:\d\d:\d\d, replaced by server2; [\d.]+ s to restart\)$", summary["line"])
    # the stand-in's ranks resumed from rank 0's last checkpoint of the first attempt, and the record says which step
    steps = {
        int(m.group(1))
        for r in range(16)
        for m in [re.search(r"^resumed from step (\d+)", (cluster.root / "runs" / "s1-r1" / f"device_{r}" / "train.log").read_text(), re.M)]
        if m
    }
    assert len(steps) == 1 and attempt["resumed_step"] == steps.pop(), (steps, attempt)
    nothing_left(cluster, "s1", "s1-r1")
    # status.yml names the attempt: the second of two (max_restarts=1) of job s1
    status = run_playbook(STATUS, spares_inventory(cluster), extra_vars=launch_vars(cluster, job_id="s1-r1"), env=QUIET)
    assert status.rc == 0 and re.search(r"status s1-r1: 16/16 ranks done in [\d.]+ s \(attempt 2 of 2 of job s1\)", status.stdout), status


def test_without_a_spare_min_np_runs_the_job_smaller(sim_cluster, tmp_path):
    # Without min_np the job ends naming the server and the three ways on: tests/unit/plugins/plugin_utils/test_restart.py
    # (the message) and tests/testbed/test_restart_bed.py (a killed host, nothing left running).
    cluster = sim_cluster()
    script = link_fault(tmp_path, 11)
    env = {"STEPS": "4", "STEP_S": "0.1"}
    extra = launch_vars(cluster, np=16, ascend_job_id="n2", ascend_train_env=env, train_command=f"bash {script}", max_restarts=1)
    res = run_playbook(TRAIN, SIM_INVENTORY, extra_vars=dict(extra, min_np=4), env=QUIET)
    assert res.rc == 0, res
    second = rank_states(cluster.root / "runs" / "n2-r1")
    assert sorted(second) == list(range(8)) and all(s["rc"] == 0 for s in second.values()), second
    assert "RANK_SIZE=8" in (cluster.root / "runs" / "n2-r1" / "device_0" / "env.log").read_text()
    assert "no spare keeps np=16 (no server left in ascend_spares): the job runs smaller, np=8 (min_np=4)" in res.stdout, res
    summary = summary_of(cluster, "n2-r1")
    (attempt,) = summary["attempts"]
    assert attempt["left_out"] == ["server1"] and attempt["np"] == 8 and attempt["shrunk"], attempt
    assert re.search(r"\(server1 at fault at \d\d:\d\d:\d\d, np now 8; [\d.]+ s to restart\)$", summary["line"]), summary["line"]
    nothing_left(cluster, "n2", "n2-r1")
