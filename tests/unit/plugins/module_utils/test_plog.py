"""module_utils._job.plog and training_job state=diagnose: each failed or stopped rank's log tail and its process's plog, in one call."""

from __future__ import annotations

import json
import os
import socket
import time
from typing import Any

from ansible_collections.ascend.cluster.plugins.module_utils._job import control, files, group, plog
from tests.helpers.ansible_cli import run_module

ERROR = "[ERROR] HCCL(%d,python3):2025-07-23-03:49:57.177.194 [hccl_socket_manager.cc:778] wait socket establish timeout, role[1] rank[12] timeout[120]"


def test_env_log_and_the_directories_it_names(tmp_path):
    env_log = tmp_path / "env.log"
    env_log.write_text("HOME=/home/u\nASCEND_PROCESS_LOG_PATH=/data/logs\nNOT A PAIR\nX=a=b\n")
    env = plog.read_env_log(str(env_log))
    assert env == {"HOME": "/home/u", "ASCEND_PROCESS_LOG_PATH": "/data/logs", "X": "a=b"}
    assert plog.plog_dirs(env, ["/extra"]) == [
        "/extra",
        "/data/logs/debug/plog",
        "/data/logs/run/plog",
        "/data/logs/plog",
        "/home/u/ascend/log/debug/plog",
        "/home/u/ascend/log/run/plog",
        "/home/u/ascend/log/plog",
    ]
    assert plog.read_env_log(str(tmp_path / "missing")) == {}


def test_rank_plog_matches_the_pid_and_keeps_error_and_warning_lines(tmp_path):
    directory = tmp_path / "ascend" / "log" / "debug" / "plog"
    directory.mkdir(parents=True)
    (directory / "plog-42_20250723034957177.log").write_text("[INFO] HCCL(42,p):x [a:1]start\n" + ERROR % 42 + "\n[WARNING] W\n")
    (directory / "plog-420_20250723034957177.log").write_text(ERROR % 420 + "\n")  # another pid sharing the prefix
    found = plog.rank_plog(42, {"HOME": str(tmp_path)})
    assert found["files"] == [str(directory / "plog-42_20250723034957177.log")]
    assert found["lines"] == [ERROR % 42, "[WARNING] W"]
    assert plog.rank_plog(42, {"HOME": str(tmp_path)}, max_lines=1)["lines"] == [ERROR % 42]
    assert plog.rank_plog(None, {"HOME": str(tmp_path)}) == {"pid": None, "pids": [], "files": [], "lines": []}
    assert plog.rank_plog(7, {"HOME": str(tmp_path)})["files"] == []


def test_training_job_diagnose_returns_failed_and_stopped_ranks_logs_and_plogs_and_changes_nothing(tmp_path):
    run, jobs, home = tmp_path / "run", tmp_path / "jobs", tmp_path / "home"
    job: dict[str, Any] = {"job_id": "j", "run_dir": str(run), "ranks": [{"rank_id": r, "device_id": r} for r in range(3)]}
    control.record_job(str(jobs), job)
    control.open_gate(str(jobs), control.load_job(str(jobs), "j"), time.time())
    files.record_abort(str(jobs / "j"), files.failed_line(1, 1))
    now = time.time()
    # rank 0 done, rank 1 failed (exit 1), rank 2 stopped by us (SIGTERM after the abort)
    for rank, rc, stopped_by in ((0, 0, None), (1, 1, None), (2, -15, "rank 1 failed (rc=1)")):
        rdir = run / ("device_%d" % rank)
        rdir.mkdir(parents=True)
        files.write_json(
            str(rdir / files.STATE_FILE),
            {"phase": "exited", "rc": rc, "pid": 1000 + rank, "started": now - 5, "ended": now, "stopped_by": stopped_by},
        )
        (rdir / files.TRAIN_LOG).write_text("".join("line %d\n" % i for i in range(300)))
        (rdir / files.ENV_LOG).write_text("HOME=%s\n" % home)
    plogs = home / "ascend" / "log" / "debug" / "plog"
    plogs.mkdir(parents=True)
    (plogs / "plog-1001_1.log").write_text(ERROR % 1001 + "\n")
    # rank 1 raised under torch's @record (its TORCHELASTIC_ERROR_FILE); rank 2's file is not torch's: not read
    stack = 'Traceback (most recent call last):\n  File "/data/train.py", line 41, in main\n    step()\nValueError: NaN\n'
    recorded = {"message": {"message": "ValueError: NaN", "extraInfo": {"py_callstack": stack, "timestamp": "1795436105"}}}
    (run / "device_1" / files.ERROR_FILE).write_text(json.dumps(recorded))
    (run / "device_2" / files.ERROR_FILE).write_text("{not json")
    # this is rank 0's server: its group view names the job's first failure (here another server's rank 9, first by 29 ms)
    cause = {"rank_id": 9, "server": "10.0.0.2", "host": "h2", "device_id": 1, "rc": 1, "error": None}
    files.write_json(str(jobs / "j" / files.GROUP_FILE), {"status": group.ENDED, "cause": cause})
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        before = sorted(os.listdir(jobs / "j"))
        out = run_module(
            "training_job",
            {"state": "diagnose", "job_root": str(jobs), "lock_dir": str(tmp_path / "locks"), "tail_failed": 50, "ports": [port, 1]},
            check=True,
        )
    assert out["_rc"] == 0 and out["changed"] is False, out
    ranks = {r["rank_id"]: r for r in out["ranks"]}
    assert [ranks[r]["state"] for r in range(3)] == ["done", "failed", "stopped"]
    assert "plog" not in ranks[0] and "tail" not in ranks[0]
    assert len(ranks[1]["tail"]) == 50 and ranks[1]["tail"][-1] == "line 299"
    assert ranks[1]["plog"]["lines"] == [ERROR % 1001] and ranks[2]["plog"]["files"] == []
    assert ranks[1]["torch_error"]["exception"] == "ValueError: NaN" and ranks[1]["torch_error"]["traceback"][-1] == "ValueError: NaN"
    assert "torch_error" not in ranks[2] and "torch_error" not in ranks[0]
    assert out["failed_rank"]["rank_id"] == 1 and out["abort"] == "rank 1 failed (rc=1)"
    assert out["group_cause"] == cause  # the diagnosis names that rank first, as the job's FAILED line does
    assert list(out["ports_in_use"]) == [str(port)] and "python" in out["ports_in_use"][str(port)]
    assert out["busy"] == []
    assert sorted(os.listdir(jobs / "j")) == before


def test_rank_plog_takes_every_pid_of_the_ranks_tree(tmp_path):
    directory = tmp_path / "ascend" / "log" / "debug" / "plog"
    directory.mkdir(parents=True)
    (directory / "plog-43_20250723034957177.log").write_text(ERROR % 43 + "\n")
    found = plog.rank_plog(42, {"HOME": str(tmp_path)}, pids=[42, 43, 44])
    assert found["pids"] == [42, 43, 44] and found["files"] == [str(directory / "plog-43_20250723034957177.log")]
    assert found["lines"] == [ERROR % 43]


# A wrapper as the README's `bash train_1p.sh`: its python child (not exec'd) is the process that writes the plog.
WRAPPER = """python3 - <<'PY'
import os, time
d = os.path.join(os.environ["ASCEND_PROCESS_LOG_PATH"], "debug", "plog")
os.makedirs(d, exist_ok=True)
with open(os.path.join(d, "plog-%d_20250723034957177.log" % os.getpid()), "w") as f:
    f.write("[ERROR] HCCL(%d,python3):2025-07-23-03:49:57.177.194 [hccl_socket.cc:1] listen on ip[198.19.3.9] and specific port[16666] fail\\n" % os.getpid())
time.sleep(0.5)
PY
exit 1
"""


def test_a_wrappers_child_plog_is_found_by_the_pid_its_runner_saw_and_the_jobs_ports_come_from_env_log(tmp_path):
    """`bash train.sh` under a real runner: the plog is python's, not the shell's; diagnose finds it, and checks the
    HCCL host ports of the job's own HCCL_IF_BASE_PORT."""
    import threading

    from tests.helpers.ansible_cli import run_module
    from tests.unit.plugins.module_utils.test_job_launch import one_rank_job

    (tmp_path / "train.sh").write_text(WRAPPER)
    logs = tmp_path / "logs"
    args = one_rank_job(
        tmp_path,
        ["bash", str(tmp_path / "train.sh")],
        env={"ASCEND_PROCESS_LOG_PATH": str(logs), "HCCL_IF_BASE_PORT": "61000"},
        stall_timeout=0,
    )
    jobs = tmp_path / "jobs"
    runner = threading.Thread(target=lambda: run_module("training_rank", args))
    runner.start()
    try:
        job = control.load_job(str(jobs), "j")
        assert control.wait_staged(str(jobs), job, 30)[0]["state"] == "staged"
        control.open_gate(str(jobs), job, time.time())
    finally:
        runner.join(60)
    state = files.read_json(str(tmp_path / "run" / "device_5" / files.STATE_FILE))
    assert state["rc"] == 1 and len(state["pids"]) >= 2 and state["pids"][0] == state["pid"], state
    out = run_module(
        "training_job", {"state": "diagnose", "job_root": str(jobs), "lock_dir": str(tmp_path / "locks"), "hccl_port_count": 2}
    )
    [rank] = out["ranks"]
    [path] = rank["plog"]["files"]
    child = int(os.path.basename(path)[len("plog-") :].split("_")[0])
    assert child != state["pid"] and child in state["pids"] and path.startswith(str(logs)), (path, state)
    assert rank["plog"]["lines"][0].endswith("listen on ip[198.19.3.9] and specific port[16666] fail")
    assert out["job_ports"] == {
        "16666": "HCCL's device port",
        "61000": "HCCL's host ports (HCCL_IF_BASE_PORT=61000)",
        "61001": "HCCL's host ports (HCCL_IF_BASE_PORT=61000)",
    }
    assert set(out["packet_filter"]) == {"blocks", "read", "unread", "found"}
