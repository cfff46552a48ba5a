"""training_ranks in a launcher mode: one node runner per server running the msrun stand-in (no MindSpore).

The module runs as a subprocess; the test plays the controller, as test_job_supervisor does.
"""

from __future__ import annotations

import json
import os
import re
import sys
import threading
import time

from ansible_collections.ascend.cluster.plugins.module_utils._job import control
from tests.helpers.ansible_cli import run_module
from tests.helpers.collection import REPO_ROOT
from tests.helpers.procs import alive, pids_with_argv
from tests.unit.plugins.module_utils.test_job_supervisor import ranks_args, staged, start

MSRUN = str(REPO_ROOT / "examples" / "train" / "msrun")
RANKS = [{"rank_id": 2, "device_id": 2}, {"rank_id": 3, "device_id": 3}]  # node 1 of 2, 2 ranks each
PRINT_IDS = 'echo "$RANK_ID $DEVICE_ID $ASCEND_RT_VISIBLE_DEVICES $MS_WORKER_NUM"'


def node_args(tmp_path, script):
    return ranks_args(
        tmp_path,
        RANKS,
        ["sh", "-c", script],
        local_count=2,
        rank_size=4,
        launcher="msrun",
        launcher_path=MSRUN,
        node_rank=1,
        nnodes=2,
        master_addr="10.0.0.1",
    )


def test_one_launcher_for_the_server_holding_every_device_each_rank_with_its_own_log(tmp_path):
    thread, result = start(node_args(tmp_path, PRINT_IDS))
    job, states = staged(tmp_path, 2)
    assert len({s["runner_pid"] for s in states}) == 1  # one runner for both ranks
    runner = states[0]["runner_pid"]
    assert os.getsid(runner) == runner
    for device in (2, 3):  # it holds both devices' locks
        assert (tmp_path / "locks" / f"device_{device}.lock").read_text().startswith("job j rank ")
    control.open_gate(str(tmp_path / "jobs"), job, 0)
    thread.join(60)
    assert not result.get("failed"), result
    assert [(s["rank_id"], s["phase"], s["rc"], s["rc_from"]) for s in result["ranks"]] == [
        (2, "exited", 0, "launcher"),
        (3, "exited", 0, "launcher"),
    ]
    node = tmp_path / "run" / "node_1"
    argv = json.loads((node / "state.json").read_text())
    assert argv["rank_ids"] == [2, 3] and argv["rc"] == 0
    launcher_log = (node / "launcher.log").read_text()
    assert "'--worker_num=4', '--local_worker_num=2'" in launcher_log and "'--node_rank=1'" in launcher_log
    assert "ASCEND_RT_VISIBLE_DEVICES=2,3\n" in (node / "env.log").read_text()
    for index, rank in enumerate(RANKS):  # each rank's own log, copied from msrun's worker_<rank>.log
        text = (tmp_path / "run" / f"device_{rank['rank_id']}" / "train.log").read_text()
        assert text == f"{rank['rank_id']} {index} 2,3 4\n"


def test_every_ranks_state_records_the_servers_clock_offset(tmp_path):
    """The node runner writes each rank's state.json: the server's clock offset (from the job's group) is in each."""
    from ansible_collections.ascend.cluster.plugins.module_utils._job.node_runner import NodeRunner

    runner = NodeRunner(dict(node_args(tmp_path, PRINT_IDS), master_port=29500, host_ip="", group={"clock_offset": -2.5}))
    for directory in [runner.dir] + [str(tmp_path / "run" / f"device_{r['rank_id']}") for r in RANKS]:
        os.makedirs(directory)
    runner.save(phase="staged", started=1000.0)
    job = control.load_job(str(tmp_path / "jobs"), "j")
    states = control.rank_states(str(tmp_path / "jobs"), job)
    assert [(s["rank_id"], s["clock_offset"]) for s in states] == [(2, -2.5), (3, -2.5)]
    assert control.controller_time(states[0], "started") == 1002.5


def test_a_failing_worker_fails_every_rank_with_the_launchers_exit_code_and_leaves_nothing(tmp_path):
    script = 'if [ "$DEVICE_ID" = 1 ]; then sleep 1; exit 3; fi; exec sleep 60.25'
    thread, result = start(node_args(tmp_path, script))
    job = staged(tmp_path, 2)[0]
    control.open_gate(str(tmp_path / "jobs"), job, 0)
    thread.join(60)
    assert result["failed"]
    # msrun reports no per-rank exit code: both ranks carry its exit code; the node's first rank is named
    assert result["msg"] == "2 of 2 ranks did not exit 0: rank 2: %s; rank 3: %s" % (
        (("msrun exited 1 without naming the failed rank; each rank's own exit code is not observable"),) * 2
    )
    assert (tmp_path / "jobs" / "j" / "abort").read_text().startswith("rank 2 failed (rc=1): msrun exited 1 without naming")
    ranks = control.rank_states(str(tmp_path / "jobs"), control.load_job(str(tmp_path / "jobs"), "j"))
    assert [r["state"] for r in ranks] == ["failed", "failed"]
    assert not alive(result["ranks"][0]["pid"])  # the launcher
    assert not pids_with_argv("sleep", "60.25")  # and the worker it had stopped


def test_a_launcher_that_cannot_start_fails_every_rank_with_127_and_aborts_the_job(tmp_path):
    args = dict(node_args(tmp_path, PRINT_IDS), launcher_path=str(tmp_path / "no-msrun"))
    thread, result = start(args)
    job = staged(tmp_path, 2)[0]
    control.open_gate(str(tmp_path / "jobs"), job, 0)
    thread.join(60)
    assert result["failed"]
    assert [(s["rank_id"], s["rc"], s["rc_from"]) for s in result["ranks"]] == [(2, 127, "launcher"), (3, 127, "launcher")]
    launcher_log = (tmp_path / "run" / "node_1" / "launcher.log").read_text().splitlines()
    assert launcher_log[0].startswith("ascend.cluster: [") and launcher_log[1].startswith("cannot start [")
    assert (tmp_path / "jobs" / "j" / "abort").read_text().startswith("rank 2 failed (rc=127")


WORKER = """import os, sys, time
print("step 1 pid", os.getpid(), flush=True)
while os.environ["RANK_ID"] == "2":  # rank 2 keeps printing; rank 3 hangs after its first step
    print("tick", flush=True)
    time.sleep(0.2)
time.sleep(60.5)
"""


def test_a_stalled_worker_stops_the_launcher_and_fails_its_rank_with_its_own_stacks(tmp_path):
    from tests.unit.plugins.module_utils.test_job_progress import FAKE_PY_SPY

    (tmp_path / "worker.py").write_text(WORKER)
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "py-spy").write_text(FAKE_PY_SPY)
    (tmp_path / "bin" / "py-spy").chmod(0o755)
    args = dict(node_args(tmp_path, f"exec {sys.executable} {tmp_path}/worker.py"), stall_timeout=1.5)
    result: dict = {}
    env = {"PATH": f"{tmp_path}/bin{os.pathsep}{os.environ['PATH']}"}
    thread = threading.Thread(target=lambda: result.update(run_module("training_ranks", args, env=env, timeout=90)))
    thread.start()
    job = staged(tmp_path, 2)[0]
    began = time.time()
    control.open_gate(str(tmp_path / "jobs"), job, 0)
    thread.join(60)
    assert time.time() - began < 15 and result["failed"], result
    log = (tmp_path / "run" / "device_3" / "train.log").read_text().splitlines()
    pid = int(log[0].split()[-1])  # the rank's worker, as it said
    abort = (tmp_path / "jobs" / "j" / "abort").read_text()
    assert re.fullmatch(rf'rank 3 failed \(rc=-?\d+\): stalled: no progress for [23] s; last line: "step 1 pid {pid}"\n', abort), abort
    ranks = control.rank_states(str(tmp_path / "jobs"), job)
    assert [r["state"] for r in ranks] == ["stopped", "failed"]
    assert ranks[1]["error"] == abort.split(": ", 1)[1].strip()
    state = json.loads((tmp_path / "run" / "device_3" / "state.json").read_text())
    assert state["stalled"]["stack"][0] == f"Process {pid}: python3 -c ..."  # rank 3's worker only, found by its RANK_ID
    assert sum(line.startswith("Process ") for line in state["stalled"]["stack"]) == 1
    assert "stalled" not in json.loads((tmp_path / "run" / "device_2" / "state.json").read_text())
    assert not pids_with_argv(sys.executable, f"{tmp_path}/worker.py")


def test_each_ranks_state_records_the_pids_of_its_own_workers_not_only_the_launchers(tmp_path):
    """diagnose finds a rank's plogs by these pids: under msrun (or torchrun) the launcher's pid is no rank's process."""
    script = f'echo $$ > {tmp_path}/worker_$RANK_ID; sleep 2'
    thread, result = start(node_args(tmp_path, script))
    job, _states = staged(tmp_path, 2)
    control.open_gate(str(tmp_path / "jobs"), job, 0)
    thread.join(60)
    assert not result.get("failed"), result
    for rank in (2, 3):
        worker = int((tmp_path / f"worker_{rank}").read_text())
        state = json.loads((tmp_path / "run" / f"device_{rank}" / "state.json").read_text())
        assert worker in state["pids"] and state["pid"] not in state["pids"], (rank, worker, state)
