"""The per-node launchers' argv / env builders, their failure report parser and per-rank outcomes (pure functions)."""

from __future__ import annotations

import os
import subprocess

import pytest

from ansible_collections.ascend.cluster.plugins.module_utils._job import launcher as launchers
from ansible_collections.ascend.cluster.plugins.module_utils._job.node_runner import descendant_groups, descendants, start_time, still_ours

NODE = {
    "node_rank": 1,
    "nnodes": 2,
    "rank_size": 16,
    "first_rank": 8,
    "local_count": 8,
    "devices": [0, 1, 2, 3, 4, 5, 6, 7],
    "master_addr": "10.0.0.1",
    "master_port": 29500,
    "log_dir": "/runs/j/node_1/logs",
    "rank_table_path": "/etc/ascend/rank_table.json",
    "host_ip": "10.0.0.2",
}
TORCH_OPTS = [
    "--nnodes=2",
    "--node-rank=1",
    "--nproc-per-node=8",
    "--master-addr=10.0.0.1",
    "--master-port=29500",
    "--max-restarts=0",
    "--log-dir=/runs/j/node_1/logs",
    "--redirects=3",
]
MSRUN_OPTS = [
    "--worker_num=16",
    "--local_worker_num=8",
    "--master_addr=10.0.0.1",
    "--master_port=29500",
    "--node_rank=1",
    "--log_dir=/runs/j/node_1/logs",
    "--join=True",
]


@pytest.mark.parametrize(
    "launcher, argv, extra, expected",
    [
        ("torchrun", ["train.py", "--lr", "0.1"], [], ["torchrun", *TORCH_OPTS, "train.py", "--lr", "0.1"]),
        ("torchrun", ["python3", "train.py"], [], ["torchrun", *TORCH_OPTS, "--no-python", "python3", "train.py"]),
        (
            "torchrun",
            ["bash", "run.sh", "a b"],
            ["--monitor-interval=1"],
            ["torchrun", *TORCH_OPTS, "--monitor-interval=1", "--no-python", "bash", "run.sh", "a b"],
        ),
        ("msrun", ["train.py", "--x", "$HOME"], [], ["msrun", *MSRUN_OPTS, "train.py", "--x", "$HOME"]),
        ("msrun", ["bash", "run.sh"], ["--cluster_time_out=300"], ["msrun", *MSRUN_OPTS, "--cluster_time_out=300", "bash", "run.sh"]),
    ],
)
def test_launcher_argv(launcher, argv, extra, expected):
    assert launchers.launcher_argv(launcher, launcher, argv, NODE, extra) == expected


def test_launcher_argv_refuses_an_unknown_launcher():
    with pytest.raises(ValueError, match="unknown launcher 'mpirun'; choose one of per_device, torchrun, msrun"):
        launchers.launcher_argv("mpirun", "mpirun", ["train.py"], NODE)


@pytest.mark.parametrize(
    "launcher, framework, extra, expected_part, absent",
    [
        (
            "torchrun",
            "pytorch",
            {},
            {"ASCEND_RT_VISIBLE_DEVICES": "0,1,2,3,4,5,6,7", "RANK_TABLE_FILE": "/etc/ascend/rank_table.json", "HCCL_IF_IP": "10.0.0.2"},
            ("RANK", "LOCAL_RANK", "RANK_ID", "DEVICE_ID", "MASTER_ADDR", "WORLD_SIZE"),
        ),
        (
            "msrun",
            "mindspore",
            {"GLOG_v": "2"},
            {"RANK_SIZE": "16", "DEVICE_NUM": "8", "GLOG_v": "2", "HCCL_CONNECT_TIMEOUT": "600"},
            ("RANK_ID",),
        ),
        ("msrun", "mindspore_legacy", {}, {"MINDSPORE_HCCL_CONFIG_PATH": "/etc/ascend/rank_table.json"}, ("RANK_TABLE_FILE",)),
        ("torchrun", "pytorch", {"HCCL_IF_IP": "10.9.9.9"}, {"HCCL_IF_IP": "10.9.9.9"}, ()),  # the job's env wins
    ],
)
def test_launcher_env(launcher, framework, extra, expected_part, absent):
    env = launchers.launcher_env(launcher, framework, NODE, 600 if launcher == "msrun" else 120, extra)
    assert dict((k, env[k]) for k in expected_part) == expected_part
    assert not set(absent) & set(env)


def test_launcher_env_devices_in_local_rank_order_and_aoe_conflict():
    env = launchers.launcher_env("torchrun", "pytorch", dict(NODE, devices=[6, 7], local_count=2), 120)
    assert env["ASCEND_RT_VISIBLE_DEVICES"] == "6,7"
    with pytest.raises(ValueError, match="TUNE_BANK_PATH=/a in the job's environment conflicts"):
        launchers.launcher_env("torchrun", "pytorch", NODE, 120, {"TUNE_BANK_PATH": "/a"}, "/bank")


@pytest.mark.parametrize(
    "launcher, ranks, node_rank, error",
    [
        ("torchrun", [{"rank_id": 8, "device_id": 0}, {"rank_id": 9, "device_id": 1}], 1, None),
        ("torchrun", [{"rank_id": 5, "device_id": 4}], 2, None),  # torchrun: uneven servers are fine
        ("msrun", [{"rank_id": 8, "device_id": 0}, {"rank_id": 9, "device_id": 1}], 4, None),
        (
            "torchrun",
            [{"rank_id": 8, "device_id": 0}, {"rank_id": 10, "device_id": 1}],
            1,
            "torchrun numbers this server's ranks 8..9 in device order, but the rank table gives them 8, 10",
        ),
        ("msrun", [{"rank_id": 9, "device_id": 0}, {"rank_id": 8, "device_id": 1}], 1, "gives them 9, 8: use launcher=per_device"),
        (
            "msrun",
            [{"rank_id": 5, "device_id": 4}],
            2,
            "msrun numbers node 2's 1 workers from 2, but its first rank in the rank table is 5",
        ),
        ("torchrun", [], 0, "at least one rank"),
    ],
)
def test_check_layout(launcher, ranks, node_rank, error):
    if error is None:
        launchers.check_layout(launcher, ranks, node_rank)
    else:
        with pytest.raises(ValueError, match=error):
            launchers.check_layout(launcher, ranks, node_rank)


TORCH_REPORT = """\
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
============================================================
train_gloo.py FAILED
------------------------------------------------------------
Failures:
[1]:
  time      : 2026-11-24_05:10:00
  host      : h2
  rank      : 10 (local_rank: 2)
  exitcode  : -9 (pid: 4243)
  error_file: <N/A>
  traceback : Signal 9 (SIGKILL) received by PID 4243
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2026-11-24_05:10:00
  host      : h2
  rank      : 9 (local_rank: 1)
  exitcode  : 1 (pid: 4242)
  error_file: <N/A>
  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html
============================================================
"""


def test_parse_torchrun_failures():
    assert launchers.parse_torchrun_failures(TORCH_REPORT) == ({10: -9, 9: 1}, 9)
    assert launchers.parse_torchrun_failures("no report here\nrank : 3\n") == ({}, None)


def outcome(rank, rc, rc_from="launcher", stopped=False, error=None, blame=False):
    return {"rank_id": rank, "rc": rc, "rc_from": rc_from, "stopped": stopped, "error": error, "blame": blame}


NOT_NAMED = "%s exited 1 without naming the failed rank; each rank's own exit code is not observable"


@pytest.mark.parametrize(
    "launcher, rc, console, stopped_by, expected",
    [
        ("torchrun", 0, "", None, [outcome(8, 0), outcome(9, 0), outcome(10, 0)]),
        (
            "torchrun",
            1,
            TORCH_REPORT,
            None,
            [
                outcome(8, 1, stopped=True, error="stopped by torchrun after rank 9 failed"),
                outcome(9, 1, "report", blame=True),
                outcome(10, -9, "report", stopped=True, error="stopped by torchrun after rank 9 failed"),  # torchrun's own KILL
            ],
        ),
        ("torchrun", 1, TORCH_REPORT, "stop requested", [outcome(8, 1, stopped=True), outcome(9, 1, "report"), outcome(10, -9, "report")]),
        (
            "torchrun",
            1,
            "Traceback ... SignalException",
            None,
            [
                outcome(8, 1, error=NOT_NAMED % "torchrun", blame=True),
                outcome(9, 1, error=NOT_NAMED % "torchrun"),
                outcome(10, 1, error=NOT_NAMED % "torchrun"),
            ],
        ),
        (
            "torchrun",
            1,
            "Traceback ... SignalException",
            "another server failed",
            [outcome(8, 1, stopped=True), outcome(9, 1, stopped=True), outcome(10, 1, stopped=True)],
        ),
        # msrun: its report is not parsed (its format is not documented), even when it looks like torchrun's
        (
            "msrun",
            1,
            TORCH_REPORT,
            None,
            [
                outcome(8, 1, error=NOT_NAMED % "msrun", blame=True),
                outcome(9, 1, error=NOT_NAMED % "msrun"),
                outcome(10, 1, error=NOT_NAMED % "msrun"),
            ],
        ),
    ],
)
def test_rank_outcomes(launcher, rc, console, stopped_by, expected):
    assert launchers.rank_outcomes(launcher, rc, [8, 9, 10], console, stopped_by) == expected


@pytest.mark.parametrize(("stopped_by", "blamed"), [(None, True), ("stopped by ascend.cluster.stop", False)])
def test_a_stalled_rank_is_the_nodes_failure_and_its_siblings_were_stopped(stopped_by, blamed):
    why = 'stalled: no progress for 20 s; last line: "step 3"'
    # torchrun's report names rank 9 (our TERM): the stall decides, not the report
    console = "Root Cause (first observed failure):\n  rank      : 9 (local_rank: 1)\n  exitcode  : -15 (pid: 7)\n"
    got = launchers.rank_outcomes("torchrun", 1, [8, 9, 10], console, stopped_by, 10, why)
    assert [(o["rank_id"], o["rc"], o["stopped"], o["blame"], o["error"]) for o in got] == [
        (8, 1, True, False, "stopped after rank 10 stalled"),
        (9, 1, True, False, "stopped after rank 10 stalled"),
        (10, 1, False, blamed, why),
    ]


def test_descendants_and_descendant_groups_skip_the_launchers_own_group():
    # pid: (ppid, pgid); 100 the launcher (its own group), 101/102 workers in their own sessions, 103 a
    # grandchild in 101's group, 104 a helper in the launcher's group, 200 unrelated
    table = {100: (1, 100), 101: (100, 101), 102: (100, 102), 103: (101, 101), 104: (100, 100), 105: (104, 105), 200: (1, 200)}
    assert descendant_groups(table, 100) == {101, 102, 105}
    assert descendant_groups(table, 999) == set()
    assert sorted(descendants(table, 100)) == [101, 102, 103, 104, 105] and descendants(table, 999) == []


def test_still_ours_never_names_a_group_whose_leader_pid_was_reused():
    proc = subprocess.Popen(["sleep", "30"], start_new_session=True)
    try:
        started = start_time(proc.pid)
        assert started is not None
        assert still_ours({proc.pid: started, os.getpid(): 1}) == [proc.pid]  # our own pid: another start time
    finally:
        proc.kill()
        proc.wait()
    assert still_ours({proc.pid: started}) == [proc.pid]  # leader gone: the group id is not reused while members live
