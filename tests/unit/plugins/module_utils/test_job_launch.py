"""Launch building blocks that run on the servers: env presets, npu-smi process rows, locks, runner argv."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from typing import Any

import pytest

from ansible_collections.ascend.cluster.plugins.module_utils._job import control, files
from ansible_collections.ascend.cluster.plugins.module_utils._job.env import rank_env
from ansible_collections.ascend.cluster.plugins.module_utils._job.preflight import find_busy, lock_holder
from ansible_collections.ascend.cluster.plugins.module_utils._job.runner import DeviceBusy, command_argv, take_device_lock
from ansible_collections.ascend.cluster.plugins.module_utils._npu.smi import NpuSmiParseError, parse_info_table, parse_npu_processes
from tests.helpers.procs import fork_quietly
from tests.helpers.ranks import rank_entry
from tests.unit.plugins.module_utils.hccn_fakes import INFO_TABLE_910B

RANK = rank_entry(11, "10.0.0.2")


@pytest.mark.parametrize(
    "framework, expected",
    [
        (
            "mindspore",
            {"RANK_TABLE_FILE": "/etc/ascend/rank_table.json", "RANK_ID": "11", "RANK_SIZE": "16", "DEVICE_ID": "3", "DEVICE_NUM": "8"},
        ),
        (
            "tensorflow",
            {
                "RANK_TABLE_FILE": "/etc/ascend/rank_table.json",
                "RANK_ID": "11",
                "RANK_SIZE": "16",
                "DEVICE_ID": "3",
                "DEVICE_NUM": "8",
                "ASCEND_DEVICE_ID": "3",
            },
        ),
        (
            "pytorch",
            {
                "RANK_TABLE_FILE": "/etc/ascend/rank_table.json",
                "RANK_ID": "11",
                "RANK_SIZE": "16",
                "DEVICE_ID": "3",
                "MASTER_ADDR": "10.0.0.1",
                "MASTER_PORT": "29500",
                "WORLD_SIZE": "16",
                "RANK": "11",
                "LOCAL_RANK": "3",
                "HCCL_WHITELIST_DISABLE": "1",
                "HCCL_IF_IP": "10.0.0.2",
                # torchrun's worker environment (torch's local_elastic_agent._start_workers), one server, no restarts
                "LOCAL_WORLD_SIZE": "8",
                "GROUP_RANK": "0",
                "GROUP_WORLD_SIZE": "1",
                "ROLE_NAME": "default",
                "ROLE_RANK": "11",
                "ROLE_WORLD_SIZE": "16",
                "TORCHELASTIC_RUN_ID": "none",
                "TORCHELASTIC_MAX_RESTARTS": "0",
                "TORCHELASTIC_RESTART_COUNT": "0",
            },
        ),
        (
            "mindspore_legacy",
            {
                "MINDSPORE_HCCL_CONFIG_PATH": "/etc/ascend/rank_table.json",
                "RANK_ID": "11",
                "RANK_SIZE": "16",
                "DEVICE_ID": "3",
                "DEVICE_NUM": "8",
            },
        ),
    ],
)
def test_rank_env_presets(framework, expected):
    expected = dict(expected, HCCL_CONNECT_TIMEOUT="300")
    assert rank_env(framework, RANK, 300) == expected


def test_a_per_device_pytorch_rank_gets_its_servers_place_the_jobs_id_and_its_error_file():
    rank = dict(RANK, group_rank=1, group_world_size=2, run_id="20261123T101500-1", error_file="/run/j/device_11/error.json")
    env = rank_env("pytorch", rank, 120, {"TORCHELASTIC_MAX_RESTARTS": "2", "TORCHELASTIC_RESTART_COUNT": "1"})
    assert {k: env[k] for k in ("GROUP_RANK", "GROUP_WORLD_SIZE", "TORCHELASTIC_RUN_ID", "TORCHELASTIC_ERROR_FILE")} == {
        "GROUP_RANK": "1",
        "GROUP_WORLD_SIZE": "2",
        "TORCHELASTIC_RUN_ID": "20261123T101500-1",
        "TORCHELASTIC_ERROR_FILE": "/run/j/device_11/error.json",
    }
    # the launch role's restart values (its env) replace the module's defaults
    assert (env["TORCHELASTIC_MAX_RESTARTS"], env["TORCHELASTIC_RESTART_COUNT"]) == ("2", "1")
    # no agent store to join: rank 0 serves MASTER_PORT itself
    assert "TORCHELASTIC_USE_AGENT_STORE" not in env
    # the other presets get none of torchrun's variables
    assert not [k for k in rank_env("mindspore", rank, 120) if k.startswith(("TORCHELASTIC_", "GROUP_", "ROLE_", "LOCAL_WORLD"))]


def test_user_env_comes_last_and_overrides():
    env = rank_env("pytorch", RANK, 120, {"MASTER_PORT": 6000, "GLOO_SOCKET_IFNAME": "lo"})
    assert env["MASTER_PORT"] == "6000" and env["GLOO_SOCKET_IFNAME"] == "lo"


def test_unknown_framework_names_the_choices():
    with pytest.raises(ValueError, match="mindspore, mindspore_legacy, pytorch, tensorflow"):
        rank_env("jax", RANK, 120)


# the shared two-NPU table, NPU 1 running two processes
NPU_SMI_INFO = (
    INFO_TABLE_910B
    + """\
| 1       0                 | 4242          | python3                  | 3012                    |
| 1       0                 | 4243          | python3                  | 10                      |
+===========================+===============+====================================================+
"""
)


def test_npu_smi_process_rows():
    assert parse_npu_processes(NPU_SMI_INFO, parse_info_table(NPU_SMI_INFO)) == [
        {"device_id": 1, "npu_id": 1, "chip_id": 0, "where": "NPU 1", "pid": 4242, "name": "python3", "container_pid": None},
        {"device_id": 1, "npu_id": 1, "chip_id": 0, "where": "NPU 1", "pid": 4243, "name": "python3", "container_pid": None},
    ]


def test_npu_smi_without_processes_or_without_its_process_section():
    """No process: an empty list. No process section at all (the output cut short): leftovers cannot be seen, which
    the pre-flight must not read as "none" (issue 26 item 4)."""
    idle = NPU_SMI_INFO.split("| 1       0                 | 4242", maxsplit=1)[0]
    assert parse_npu_processes(idle, parse_info_table(idle)) == []
    cut = NPU_SMI_INFO.split("| NPU     Chip", maxsplit=1)[0]
    with pytest.raises(NpuSmiParseError, match="process section"):
        parse_npu_processes(cut, parse_info_table(cut))


def test_device_lock_is_exclusive_and_names_its_holder(tmp_path):
    fd = take_device_lock(str(tmp_path), 3, "job A rank 11 pid 1")
    try:
        with pytest.raises(DeviceBusy, match=r"device 3 is locked .* by job A rank 11 pid 1"):
            take_device_lock(str(tmp_path), 3, "job B rank 0 pid 2")
        assert lock_holder(str(tmp_path), 3) == "job A rank 11 pid 1"
        assert lock_holder(str(tmp_path), 4) is None
        busy = find_busy([3, 4], str(tmp_path), str(tmp_path / "jobs"), [{"device_id": 4, "chip_id": 0, "pid": 9, "name": "x"}])
        assert [(b["device_id"], b["source"]) for b in busy] == [(3, "lock"), (4, "npu-smi")]
    finally:
        os.close(fd)
    assert lock_holder(str(tmp_path), 3) is None  # freed with the holder


def test_lock_held_by_a_child_outlives_the_runner(tmp_path):
    fd = take_device_lock(str(tmp_path), 0, "rank 0")
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"], pass_fds=(fd,))
    os.close(fd)
    try:
        assert lock_holder(str(tmp_path), 0) == "rank 0"
    finally:
        child.kill()
        child.wait()
    assert lock_holder(str(tmp_path), 0) is None


def test_command_is_never_interpolated_by_a_shell(tmp_path):
    set_env = tmp_path / "set_env.sh"
    set_env.write_text("export FROM_SET_ENV=yes\n")
    argv = command_argv(
        [sys.executable, "-c", "import os, sys; print(sys.argv[1:], os.environ.get('FROM_SET_ENV'))", "$(touch pwned)", "a b", "*;"],
        str(set_env),
    )
    out = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, check=True).stdout
    assert out.strip() == "['$(touch pwned)', 'a b', '*;'] yes"
    assert not (tmp_path / "pwned").exists()
    assert command_argv(["x"], str(tmp_path / "missing.sh")) == ["x"]


def test_rank_states_and_first_failure(tmp_path):
    job: dict[str, Any] = {"job_id": "j", "run_dir": str(tmp_path / "run"), "ranks": [{"rank_id": r, "device_id": r} for r in range(3)]}
    control.record_job(str(tmp_path / "jobs"), job)
    now = time.time()
    for rank, phase, rc, ended in ((0, "exited", 0, now), (1, "exited", 2, now + 1), (2, "exited", 1, now)):
        rdir = files.rank_dir(job["run_dir"], rank)
        os.makedirs(rdir)
        files.write_json(os.path.join(rdir, files.STATE_FILE), {"phase": phase, "rc": rc, "ended": ended, "started": now - 5})
        with open(os.path.join(rdir, files.TRAIN_LOG), "w") as handle:
            handle.write("".join("line %d\n" % i for i in range(30)))
    states = control.rank_states(str(tmp_path / "jobs"), control.load_job(str(tmp_path / "jobs"), "j"), 1, 5)
    assert [s["state"] for s in states] == ["done", "failed", "failed"]
    assert states[0]["tail"] == ["line 29"] and len(states[1]["tail"]) == 5
    first = control.first_failure(states)
    assert first is not None and first["rank_id"] == 2  # ended first


@pytest.mark.parametrize("fail_fast", [True, False, None])
def test_the_poll_stops_the_other_ranks_after_a_failure_only_when_the_job_fails_fast(tmp_path, fail_fast):
    """The job's record keeps the launch's fail_fast (unset: true); the poll follows it unless told otherwise."""
    job: dict[str, Any] = {"job_id": "j", "run_dir": str(tmp_path / "run"), "ranks": [{"rank_id": r, "device_id": r} for r in range(2)]}
    if fail_fast is not None:
        job["fail_fast"] = fail_fast
    table = control.record_with_table(str(tmp_path / "jobs"), job, None, None, write=False)
    assert table.get("rank_table_path") is None
    recorded = control.load_job(str(tmp_path / "jobs"), "j")
    assert recorded["fail_fast"] is (fail_fast is not False)
    sleeper = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        now = time.time()
        for rank, state in ((0, {"phase": "running", "pid": sleeper.pid, "pgid": sleeper.pid}), (1, {"phase": "exited", "rc": 1})):
            rdir = files.rank_dir(job["run_dir"], rank)
            os.makedirs(rdir)
            files.write_json(os.path.join(rdir, files.STATE_FILE), dict(state, started=now - 5, ended=now if rank else None))
        status = control.poll(str(tmp_path / "jobs"), recorded, 0.5, act=False)
        assert status["stopped"] == [] and sleeper.poll() is None and status["fail_fast"] is recorded["fail_fast"]
        found = control.poll(str(tmp_path / "jobs"), recorded, 0.5)
        assert found["failed_rank"]["rank_id"] == 1 and found["fail_fast"] is recorded["fail_fast"]
        if recorded["fail_fast"]:
            assert found["stopped"] == [0] and found["abort"] == "rank 1 failed (rc=1)"
            assert sleeper.wait(10) == -15
        else:
            assert found["stopped"] == [] and found["abort"] is None and sleeper.poll() is None
            told = control.poll(str(tmp_path / "jobs"), recorded, 0.5, fail_fast_given=True)  # the poll's own option wins
            assert told["stopped"] == [0] and sleeper.wait(10) == -15
    finally:
        if sleeper.poll() is None:
            sleeper.kill()
        sleeper.wait()


def test_latest_names_only_a_job_whose_gate_opened(tmp_path):
    root = str(tmp_path)
    control.record_job(root, {"job_id": "started", "run_dir": "/x", "ranks": []})
    control.open_gate(root, control.load_job(root, "started"), time.time())
    control.record_job(root, {"job_id": "refused", "run_dir": "/y", "ranks": []})  # staged, never started
    assert files.read_latest(root) == "started"
    assert control.load_job(root, "latest")["job_id"] == "started"
    control.open_gate(root, control.load_job(root, "refused"), time.time())
    assert files.read_latest(root) == "refused"


def _recorded(root: str, job_id: str, at: float, phase: str | None = None, runner_pid: int | None = None) -> dict:
    """A job recorded at ``at`` (its job.json's time) with one rank; with ``phase`` the rank's state file says so."""
    job: dict[str, Any] = {"job_id": job_id, "run_dir": os.path.join(root, "runs", job_id), "ranks": [{"rank_id": 0, "device_id": 0}]}
    directory = control.record_job(root, job)
    os.utime(os.path.join(directory, files.JOB_FILE), (at, at))
    if phase:
        rdir = files.rank_dir(job["run_dir"], 0)
        os.makedirs(rdir)
        files.write_json(os.path.join(rdir, files.STATE_FILE), {"phase": phase, "runner_pid": runner_pid})
    return job


def _dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def test_latest_is_the_last_started_job_or_a_newer_one_still_staged_at_its_gate(tmp_path):
    root, now = str(tmp_path), time.time()
    _recorded(root, "older-staged", now - 30, "staged", os.getpid())  # recorded before the started job: never latest
    control.open_gate(root, _recorded(root, "started", now - 20, "running", os.getpid()), now)
    # a newer job whose runners died at the gate (released by a Ctrl-C, or gone) is not latest: the started one is
    _recorded(root, "released", now - 10, "staged", _dead_pid())
    assert control.resolve_job_id(root, "latest") == "started"
    # a newer job whose runner still waits at the gate is (its launch was killed mid-staging, or is under way) ...
    _recorded(root, "staged", now, "staged", os.getpid())
    assert control.resolve_job_id(root, "latest") == "staged"
    assert control.load_job(root, "latest")["job_id"] == "staged"
    assert control.resolve_job_id(root, "started") == "started"  # a named job is the one named
    # ... until its runner gives up (the gate time-out, a stop): latest names the started job again
    files.write_json(os.path.join(root, "runs", "staged", "device_0", files.STATE_FILE), {"phase": "aborted", "stopped_by": "stop X"})
    assert control.resolve_job_id(root, "latest") == "started"
    # a stop that the job's group passed on here before this server's own stop call looked still finds it
    assert control.resolve_job_id(root, "latest", stopped_by="stop X") == "staged"
    assert control.resolve_job_id(root, "latest", stopped_by="another stop") == "started"
    assert files.read_latest(root) == "started"  # the file itself still names only jobs that started


def test_latest_without_a_started_job_is_a_staged_one(tmp_path):
    root = str(tmp_path)
    assert control.resolve_job_id(root, "latest") is None
    _recorded(root, "staged", time.time(), "staged", os.getpid())
    assert control.resolve_job_id(root, "latest") == "staged"


def one_rank_job(tmp_path, argv: list, **extra: Any) -> dict:
    """Job ``j`` recorded under ``tmp_path/jobs`` with rank 5 on device 2; the ``training_rank`` arguments that run it."""
    control.record_job(str(tmp_path / "jobs"), {"job_id": "j", "run_dir": str(tmp_path / "run"), "ranks": [{"rank_id": 5, "device_id": 2}]})
    args = {
        "job_id": "j",
        "job_root": str(tmp_path / "jobs"),
        "run_dir": str(tmp_path / "run"),
        "lock_dir": str(tmp_path / "locks"),
        "argv": argv,
        "rank_id": 5,
        "device_id": 2,
        "rank_size": 8,
        "local_rank": 0,
        "local_count": 1,
        "rank_table_path": "/x.json",
        "set_env": str(tmp_path / "absent.sh"),
    }
    return dict(args, **extra)


def test_status_and_stop_of_latest_find_a_job_staged_at_its_gate_and_stop_releases_it(tmp_path):
    """training_job status / stop with the default job_id, while a real runner waits at the gate of a job that never opened."""
    import threading

    from tests.helpers.ansible_cli import run_module

    job_root, locks = tmp_path / "jobs", str(tmp_path / "locks")
    args = one_rank_job(tmp_path, ["sleep", "60"])
    runner = threading.Thread(target=lambda: run_module("training_rank", args))
    runner.start()
    try:
        assert control.wait_staged(str(job_root), control.load_job(str(job_root), "j"), 30)[0]["state"] == "staged"
        status = run_module("training_job", {"state": "status", "job_root": str(job_root)})
        assert status["job_id"] == "j" and [r["state"] for r in status["ranks"]] == ["staged"], status
        stopped = run_module("training_job", {"state": "stop", "job_root": str(job_root), "reason": "stopped by test"})
        assert stopped["changed"] and stopped["job_id"] == "j" and stopped["stopped"] == [5], stopped
        assert [(r["state"], r["phase"], r["stopped_by"]) for r in stopped["ranks"]] == [("stopped", "aborted", "stopped by test")]
    finally:
        files.record_abort(str(job_root / "j"), "test over")
        runner.join(30)
    assert lock_holder(locks, 2) is None  # its device is free
    # released, the job no longer stands in for latest: nothing started here, so there is nothing to stop
    again = run_module("training_job", {"state": "stop", "job_root": str(job_root)})
    assert again["changed"] is False and "nothing to stop" in again["msg"], again


def test_unknown_job_says_what_is_known(tmp_path):
    with pytest.raises(control.JobError, match="no training job recorded"):
        control.load_job(str(tmp_path), "latest")
    control.record_job(str(tmp_path), {"job_id": "a", "run_dir": "/x", "ranks": []})
    with pytest.raises(control.JobError, match="known jobs: a"):
        control.load_job(str(tmp_path), "b")


def as_someone_else(work: Any) -> str:
    """``work()``'s result (text) as a user who may not read root's files: nobody, in a forked child, when this runs as
    root; else this user, the files made unreadable to it by the caller (mode 000)."""
    if os.geteuid() != 0:
        return str(work())
    import pwd

    nobody = pwd.getpwnam("nobody")
    read_end, write_end = os.pipe()
    pid = fork_quietly()
    if pid == 0:  # pragma: no cover - the child
        code = 1
        try:
            os.setgroups([])
            os.setgid(nobody.pw_gid)
            os.setuid(nobody.pw_uid)
            os.write(write_end, str(work()).encode())
            code = 0
        finally:
            os._exit(code)
    os.close(write_end)
    with os.fdopen(read_end) as pipe:
        said = pipe.read()
    os.waitpid(pid, 0)
    return said


def test_a_job_this_user_may_not_read_is_said_so_by_stop_status_and_diagnose():
    """Issue 34: stop.yml run by a user who cannot read the job's record said "job X is not recorded ... known jobs: X".
    The record is there: stop, status and diagnose (each loads it with load_job) say permission denied, and whose it is."""
    import shutil
    import tempfile

    root = tempfile.mkdtemp(prefix="ascend-perm-")  # under /tmp: reachable by another user, unlike pytest's tmp_path
    try:
        os.chmod(root, 0o755)
        control.record_job(root, {"job_id": "j", "run_dir": "/x", "ranks": []})
        files.write_latest(root, "j")
        record = os.path.join(root, "j", files.JOB_FILE)
        assert os.stat(record).st_mode & 0o777 == 0o600  # as the launch writes it
        if os.geteuid() != 0:
            os.chmod(record, 0)

        def said(call: Any) -> Any:
            def work() -> str:
                try:
                    call()
                except control.JobError as exc:
                    return str(exc)
                return "read"

            return work

        calls = [
            lambda: control.stop_jobs(root, "latest", 1.0, "stopped by a test"),  # stop.yml's call
            lambda: control.load_job(root, "j"),  # status's and diagnose's
            lambda: control.load_job(root, "latest"),
        ]
        for call in calls:
            message = as_someone_else(said(call))
            assert message.startswith(f"permission denied: {record} cannot be read by user "), message
            assert "it belongs to " in message and message.endswith(": run it as that user, or as root (become, -b)"), message
            assert "not recorded" not in message and "known jobs" not in message
        with pytest.raises(control.JobError, match="known jobs: j"):  # a job that is not there is still said so
            control.load_job(root, "k")
    finally:
        shutil.rmtree(root)


def test_stop_with_nothing_recorded_is_a_no_op_and_status_says_why(tmp_path):
    from tests.helpers.ansible_cli import run_module

    stopped = run_module("training_job", {"state": "stop", "job_root": str(tmp_path)})
    assert stopped["_rc"] == 0 and stopped["changed"] is False and "nothing to stop" in stopped["msg"]
    status = run_module("training_job", {"state": "status", "job_root": str(tmp_path)})
    assert status.get("failed") and "no training job recorded" in status["msg"]


def test_runner_stages_waits_at_the_gate_and_records_the_exit(tmp_path):
    """training_rank end to end without Ansible: staged -> gate -> command -> exit code."""
    import json
    import threading

    from tests.helpers.ansible_cli import run_module

    job_root, run_dir = tmp_path / "jobs", tmp_path / "run"
    args = one_rank_job(tmp_path, ["sh", "-c", "echo $RANK_ID $DEVICE_ID $DEVICE_NUM; exit 3"], umask="027")
    result = {}
    runner = threading.Thread(target=lambda: result.update(run_module("training_rank", args)))
    runner.start()
    job = control.load_job(str(job_root), "j")
    assert control.wait_staged(str(job_root), job, 30)[0]["state"] == "staged"
    assert (lock_holder(str(tmp_path / "locks"), 2) or "").startswith("job j rank 5")
    opened = time.time() + 0.5
    control.open_gate(str(job_root), job, opened)
    runner.join(30)
    assert result["failed"] and result["rank"]["rc"] == 3
    state = json.loads((run_dir / "device_5" / "state.json").read_text())
    assert state["started"] >= opened and state["phase"] == "exited"
    assert (run_dir / "device_5" / "train.log").read_text() == "5 2 1\n"
    assert (run_dir / "device_5" / "env.log").stat().st_mode & 0o777 == 0o640  # the operator's umask
    assert lock_holder(str(tmp_path / "locks"), 2) is None


# The children only take a lock and _exit: no thread of the (xdist) parent is needed in them, which is
# what Python 3.12+ warns about when a multi-threaded process forks.
@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded, use of fork:DeprecationWarning")
def test_runners_staging_at_one_instant_all_make_the_lock_dir(tmp_path):
    """One supervisor forks a server's runners together: all find or make the fresh lock dir at once."""
    results = []
    for attempt in range(10):
        lock_dir = str(tmp_path / f"attempt{attempt}" / "locks")
        start_at = time.time() + 0.3
        pids = []
        for device in range(8):
            pid = os.fork()
            if pid == 0:  # pragma: no cover - child
                code = 1
                try:
                    time.sleep(max(0.0, start_at - time.time()))
                    take_device_lock(lock_dir, device, f"rank {device}")
                    code = 0
                finally:
                    os._exit(code)
            pids.append(pid)
        results.append([os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) for pid in pids])
    assert results == [[0] * 8] * 10
