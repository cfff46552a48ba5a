"""-e launcher=torchrun|msrun over real SSH on the test bed (servers h1, h2): one per-node launcher per server.

torchrun is the real one (build/torch-venv) running examples/train/train_gloo.py across the two
hosts over gloo; msrun is examples/train/msrun, the stand-in that behaves as MindSpore documents
msrun (no MindSpore here). Same bed setup as test_launch_bed (its fixture and helpers).
"""

from __future__ import annotations

import json
import re

from tests.helpers.ansible_cli import run_playbook
from tests.helpers.collection import REPO_ROOT
from tests.helpers.procs import alive, pids_with_argv
from tests.helpers.runs import read_env_log
from tests.testbed.test_launch_bed import STAND_IN, STOP, TORCH_PYTHON, TRAIN, assert_gloo_trained, bed_vars, states, train_gloo

STATUS = REPO_ROOT / "playbooks" / "status.yml"
TORCHRUN = TORCH_PYTHON.with_name("torchrun")
MSRUN = REPO_ROOT / "examples" / "train" / "msrun"
JOB_ROOT = "/run/ascend-cluster/jobs"


def node_state(launch_bed, job_id, node):
    _bed, root = launch_bed
    return json.loads((root / "runs" / job_id / f"node_{node}" / "state.json").read_text())


def launched_argv(launch_bed, job_id, node):
    """The launcher's argv, as the node runner logged it first in launcher.log."""
    _bed, root = launch_bed
    first = (root / "runs" / job_id / f"node_{node}" / "launcher.log").read_text().splitlines()[0]
    return first.split("ascend.cluster: ", 1)[1]


def test_torchrun_trains_with_gloo_across_two_servers(launch_bed):
    bed, root = launch_bed
    assert TORCHRUN.exists(), "build/torch-venv is missing: run `make torch-venv`"
    res = train_gloo(
        launch_bed, "torchrun", np=4, launcher="torchrun", ascend_launch_launcher_path=str(TORCHRUN), ascend_launch_master_port=29541
    )
    assert res.rc == 0, str(res)
    assert "train torchrun: 4/4 ranks done" in res.stdout
    ranks = states(launch_bed, "torchrun")
    assert sorted(ranks) == [0, 1, 2, 3] and all(s["rc"] == 0 and s["launcher"] == "torchrun" for s in ranks.values())
    digests = set()
    for rank, state in ranks.items():  # each rank's own log, copied from torchrun's per-worker files
        log = (root / "runs" / "torchrun" / f"device_{rank}" / "train.log").read_text()
        assert f"rank {rank}/4 joined" in log, log
        assert_gloo_trained(rank, log)
        digests.update(re.findall(r"^final weights sha256 (\w+)$", log, re.M))
        assert state["pid"] == node_state(launch_bed, "torchrun", rank // 2)["pid"]  # the ranks' process is their launcher
    assert len(digests) == 1, digests
    for node, host in ((0, "h1"), (1, "h2")):
        argv = launched_argv(launch_bed, "torchrun", node)
        for option in (
            "--nnodes=2",
            f"--node-rank={node}",
            "--nproc-per-node=2",
            f"--master-addr={bed.mgmt_ip('h1')}",
            "--master-port=29541",
        ):
            assert f"'{option}'" in argv, argv
        env = read_env_log(root / "runs" / "torchrun" / f"node_{node}" / "env.log")
        assert (env["ASCEND_RT_VISIBLE_DEVICES"], env["HCCL_IF_IP"], env["RANK_SIZE"]) == ("0,1", bed.mgmt_ip(host), "4")
        assert "RANK" not in env and "LOCAL_RANK" not in env  # torchrun gives each child its own


def test_msrun_stand_in_runs_16_ranks_then_status_and_stop_a_detached_job(launch_bed):
    bed, root = launch_bed
    common = {"launcher": "msrun", "ascend_launch_launcher_path": str(MSRUN)}
    res = run_playbook(
        TRAIN, bed.inventory, extra_vars=bed_vars(launch_bed, "msrun", ascend_train_env={"STEPS": "3", "STEP_S": "0.1"}, **common)
    )
    assert res.rc == 0, str(res)
    ranks = states(launch_bed, "msrun")
    assert sorted(ranks) == list(range(16)) and all(s["rc"] == 0 and s["rc_from"] == "launcher" for s in ranks.values())
    for rank in range(16):  # msrun's worker_<rank>.log became the rank's train.log; the stand-in's RANK_ID is the table's rank
        log = (root / "runs" / "msrun" / f"device_{rank}" / "train.log").read_text()
        assert log.startswith(f"start rank={rank} device={rank % 8} size=16 ") and "step 3 loss 333" in log, log
    argv = launched_argv(launch_bed, "msrun", 1)
    for option in ("--worker_num=16", "--local_worker_num=8", "--node_rank=1", f"--master_addr={bed.mgmt_ip('h1')}", "--join=True"):
        assert f"'{option}'" in argv, argv

    detached = run_playbook(
        TRAIN,
        bed.inventory,
        extra_vars=bed_vars(launch_bed, "msrun-detached", wait=False, ascend_train_env={"STEPS": "100000", "STEP_S": "0.5"}, **common),
    )
    assert detached.rc == 0, str(detached)
    status = run_playbook(STATUS, bed.inventory, extra_vars={"ascend_hosts": "h1,h2", "ascend_launch_job_root": JOB_ROOT})
    assert status.rc == 0 and "16 running" in status.stdout, str(status)
    workers = f"{root}/runs/msrun-detached/"
    assert len(pids_with_argv("bash", str(STAND_IN), environ=workers)) == 16  # msrun's workers, found by their job
    stop = run_playbook(STOP, bed.inventory, extra_vars={"ascend_hosts": "h1,h2", "ascend_launch_job_root": JOB_ROOT})
    assert stop.rc == 0, str(stop)
    ranks = states(launch_bed, "msrun-detached")
    assert all(s["phase"] == "exited" for s in ranks.values()), ranks
    nodes = [node_state(launch_bed, "msrun-detached", n) for n in (0, 1)]
    assert not any(alive(n["pid"]) or alive(n["runner_pid"]) for n in nodes)
    # the workers msrun had started went with it (this job's: other tests' jobs run the stand-in beside it)
    assert not pids_with_argv("bash", str(STAND_IN), environ=workers)


def test_torchrun_failing_worker_fails_the_play_naming_it_and_stops_both_servers(launch_bed):
    bed, root = launch_bed
    marker = "--data_path=launchers-failing"  # tells this job's workers from any other train_1p.sh
    res = run_playbook(
        TRAIN,
        bed.inventory,
        extra_vars=bed_vars(
            launch_bed,
            "torchrun-failing",
            np=4,
            launcher="torchrun",
            ascend_launch_launcher_path=str(TORCHRUN),
            ascend_launch_master_port=29542,
            train_command=f"bash {STAND_IN} {marker}",
            ascend_train_env={"STEPS": "600", "STEP_S": "0.1", "FAIL_RANK": "3", "FAIL_STEP": "50"},
        ),
    )
    assert res.rc != 0
    # torchrun's failure report named rank 3 and its exit code (rank 3: local rank 1 on h2)
    assert f"rank 3 (server {bed.mgmt_ip('h2')}, device 1) failed first: exit code 1" in res.stdout, str(res)
    ranks = states(launch_bed, "torchrun-failing")
    assert (ranks[3]["rc"], ranks[3]["rc_from"]) == (1, "report")
    assert ranks[2]["stopped_by_launcher"]  # torchrun stopped rank 2 itself
    assert all(ranks[r]["stopped_by"] for r in (0, 1))  # the watchers stopped h1's launcher
    nodes = [node_state(launch_bed, "torchrun-failing", n) for n in (0, 1)]
    assert not any(alive(n["pid"]) or alive(n["runner_pid"]) for n in nodes)
    assert not pids_with_argv("bash", str(STAND_IN), marker)
    # issue 26 item 2: diagnose finds a rank's plogs by its own workers' pids, not the launcher's - the worker torchrun
    # names in its failure report is among the pids the runner recorded for rank 3
    report = (root / "runs" / "torchrun-failing" / "node_1" / "launcher.log").read_text()
    worker = re.search(r"exitcode\s*:\s*1 \(pid: (\d+)\)", report)
    assert worker, report
    assert int(worker.group(1)) in ranks[3]["pids"] and nodes[1]["pid"] not in ranks[3]["pids"], (worker.group(1), ranks[3])
    assert not set(ranks[3]["pids"]) & set(ranks[2]["pids"])
