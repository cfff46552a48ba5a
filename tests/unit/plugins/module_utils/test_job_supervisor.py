"""training_ranks: one supervisor per server starting today's rank runner once per NPU.

The module runs as a subprocess (as the async wrapper runs it); the test plays the controller:
it waits for the ranks to stage, opens the gate, and reads what the runners wrote.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import signal
import subprocess
import sys
import tarfile
import threading
import time

import pytest

from ansible_collections.ascend.cluster.plugins.action.training_results import unpack_logs
from ansible_collections.ascend.cluster.plugins.module_utils._job import control, results, supervisor
from tests.helpers.ansible_cli import run_module
from tests.helpers.collection import ensure_collection_link

# A detached start goes through either module: training_ranks' own, or training_job state=stage (what the
# training_ranks action sends, module_utils/_job/stage): the same work, so the detached tests run both.
ENTRIES = ["training_ranks", "training_job state=stage"]


def start_by(entry: str, args: dict, **more) -> dict:
    if entry == "training_ranks":
        return run_module("training_ranks", args, **more)
    return run_module("training_job", {"state": "stage", "stage": args}, **more)


def ranks_args(tmp_path, ranks, argv, **extra):
    job_root, run_dir = tmp_path / "jobs", tmp_path / "run"
    control.record_job(str(job_root), {"job_id": "j", "run_dir": str(run_dir), "ranks": ranks})
    args = {
        "job_id": "j",
        "job_root": str(job_root),
        "run_dir": str(run_dir),
        "lock_dir": str(tmp_path / "locks"),
        "argv": argv,
        "ranks": ranks,
        "local_count": 8,
        "rank_size": 16,
        "rank_table_path": "/x.json",
        "set_env": str(tmp_path / "absent.sh"),
        "kill_grace": 1.0,
    }
    args.update(extra)
    return args


def start(args):
    """The module in a thread (it blocks until every rank ended); the dict its result lands in."""
    result: dict = {}
    thread = threading.Thread(target=lambda: result.update(run_module("training_ranks", args, timeout=90)))
    thread.start()
    return thread, result


def staged(tmp_path, count):
    job = control.load_job(str(tmp_path / "jobs"), "j")
    ranks = control.wait_staged(str(tmp_path / "jobs"), job, 60)
    assert [r["state"] for r in ranks] == ["staged"] * count, ranks
    return job, ranks


def parent_of(pid):
    with open(f"/proc/{pid}/stat") as handle:
        return int(handle.read().rsplit(")", 1)[1].split()[1])


def test_one_runner_per_rank_each_in_its_own_session_with_its_own_files(tmp_path):
    ranks = [{"rank_id": 8, "device_id": 0}, {"rank_id": 9, "device_id": 1}, {"rank_id": 10, "device_id": 2}]
    env_line = "echo $RANK_ID $DEVICE_ID $LOCAL_RANK $WORLD_SIZE $GROUP_RANK $GROUP_WORLD_SIZE $LOCAL_WORLD_SIZE $TORCHELASTIC_RUN_ID"
    args = ranks_args(
        tmp_path, ranks, ["sh", "-c", env_line + "; echo $TORCHELASTIC_ERROR_FILE"], framework="pytorch", node_rank=1, nnodes=2
    )
    thread, result = start(args)
    job, states = staged(tmp_path, 3)
    runners = [r["runner_pid"] for r in states]
    assert len(set(runners)) == 3
    assert all(os.getsid(pid) == pid for pid in runners)  # each runner leads its own session
    assert len({parent_of(pid) for pid in runners}) == 1  # ... all started by one supervisor
    for rank in ranks:  # each holds its own device's lock, naming itself
        lock = (tmp_path / "locks" / f"device_{rank['device_id']}.lock").read_text()
        assert lock.startswith(f"job j rank {rank['rank_id']} pid ")
    opened = time.time() + 0.3
    control.open_gate(str(tmp_path / "jobs"), job, opened)
    thread.join(60)
    assert not result.get("failed"), result
    assert result["msg"] == "3 ranks exited 0"
    assert [(s["rank_id"], s["phase"], s["rc"]) for s in result["ranks"]] == [(8, "exited", 0), (9, "exited", 0), (10, "exited", 0)]
    for index, rank in enumerate(ranks):
        rdir = tmp_path / "run" / f"device_{rank['rank_id']}"
        # torchrun's worker environment too: this server is the job's second of two, its error file is the rank's own
        assert (rdir / "train.log").read_text() == f"{rank['rank_id']} {rank['device_id']} {index} 16 1 2 8 j\n{rdir / 'error.json'}\n"
        assert "LOCAL_RANK=%d\n" % index in (rdir / "env.log").read_text()
        state = json.loads((rdir / "state.json").read_text())
        assert state["started"] >= opened and state["pgid"] == state["pid"]


def test_a_failing_rank_stops_its_siblings_and_the_result_names_it(tmp_path):
    ranks = [{"rank_id": 0, "device_id": 0}, {"rank_id": 1, "device_id": 1}]
    # rank 1 fails 2 s after the gate, so rank 0 is surely running by then (under load, a failure at
    # the gate itself may abort rank 0 before it starts: a different, also correct, outcome)
    args = ranks_args(tmp_path, ranks, ["sh", "-c", 'if [ "$RANK_ID" = 1 ]; then sleep 2; exit 3; fi; exec sleep 60'])
    thread, result = start(args)
    job = staged(tmp_path, 2)[0]
    began = time.time()
    control.open_gate(str(tmp_path / "jobs"), job, time.time())
    thread.join(60)
    assert time.time() - began < 30
    assert result["failed"]
    assert result["msg"] == "2 of 2 ranks did not exit 0: rank 0: exited rc=-15; rank 1: exited rc=3"
    assert (tmp_path / "jobs" / "j" / "abort").read_text() == "rank 1 failed (rc=3)\n"


def test_without_fail_fast_a_failing_rank_leaves_its_siblings_running_to_their_end(tmp_path):
    """fail_fast=false: rank 1 fails a second after the start; rank 0 is neither stopped nor told, and ends by itself."""
    ranks = [{"rank_id": 0, "device_id": 0}, {"rank_id": 1, "device_id": 1}]
    command = 'if [ "$RANK_ID" = 1 ]; then sleep 1; exit 3; fi; sleep 3; exit 0'
    thread, result = start(ranks_args(tmp_path, ranks, ["sh", "-c", command], fail_fast=False))
    job = staged(tmp_path, 2)[0]
    control.open_gate(str(tmp_path / "jobs"), job, time.time())
    thread.join(60)
    assert result["failed"] and result["msg"] == "1 of 2 ranks did not exit 0: rank 1: exited rc=3", result
    by_rank = {s["rank_id"]: s for s in result["ranks"]}
    assert (by_rank[0]["phase"], by_rank[0]["rc"], by_rank[0]["stopped_by"]) == ("exited", 0, None)
    assert by_rank[0]["ended"] - by_rank[1]["ended"] > 1.0  # it ran on after rank 1 failed
    assert not (tmp_path / "jobs" / "j" / "abort").exists()  # nobody stopped the job
    states = control.rank_states(str(tmp_path / "jobs"), control.load_job(str(tmp_path / "jobs"), "j"))
    assert [s["state"] for s in states] == ["done", "failed"]


def test_term_to_the_supervisor_reaches_every_runner_at_the_gate(tmp_path):
    ranks = [{"rank_id": 0, "device_id": 0}, {"rank_id": 1, "device_id": 1}]
    thread, result = start(ranks_args(tmp_path, ranks, ["true"]))
    states = staged(tmp_path, 2)[1]
    os.kill(parent_of(states[0]["runner_pid"]), signal.SIGTERM)
    thread.join(60)
    assert [(s["rank_id"], s["phase"]) for s in result["ranks"]] == [(0, "aborted"), (1, "aborted")]
    job = control.load_job(str(tmp_path / "jobs"), "j")
    assert [r["state"] for r in control.rank_states(str(tmp_path / "jobs"), job)] == ["stopped", "stopped"]
    for device in (0, 1):  # the runners released their locks
        with open(tmp_path / "locks" / f"device_{device}.lock") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)


def test_a_stop_that_arrives_between_a_fork_and_its_record_still_reaches_that_runner(monkeypatch, tmp_path):
    """Under load the supervisor can be descheduled right after a fork while the runner stages: a TERM handled
    before the child was recorded used to reach only the runners before it (the last one waited at the gate
    until its time-out). Here the fork itself sends the TERM; the forked "runners" are sleep processes."""
    sleepers = [subprocess.Popen(["sleep", "30"]) for _rank in (0, 1)]  # started before, with no signal blocked
    forked: list = []

    def fork_then_stop():
        forked.append(sleepers[len(forked)].pid)
        if len(forked) == 2:
            os.kill(os.getpid(), signal.SIGTERM)
        return forked[-1]

    ranks = [{"rank_id": r, "device_id": r, "local_rank": r, "local_count": 2} for r in (0, 1)]
    monkeypatch.setattr(supervisor.os, "fork", fork_then_stop)
    handlers = {signum: signal.getsignal(signum) for signum in supervisor.FORWARDED}
    try:
        supervisor.Supervisor(dict(ranks_args(tmp_path, ranks, ["true"]), ranks=ranks)).start()
        assert [s.wait(10) for s in sleepers] == [-signal.SIGTERM, -signal.SIGTERM]
    finally:
        for signum, handler in handlers.items():
            signal.signal(signum, handler)
        for sleeper in sleepers:
            sleeper.kill()
            sleeper.wait()
    assert not signal.pthread_sigmask(signal.SIG_BLOCK, ())  # nothing left blocked


def test_a_busy_device_refuses_only_its_rank(tmp_path):
    ranks = [{"rank_id": 0, "device_id": 0}, {"rank_id": 1, "device_id": 1}]
    args = ranks_args(tmp_path, ranks, ["true"], gate_timeout=1)
    os.makedirs(tmp_path / "locks")
    with open(tmp_path / "locks" / "device_1.lock", "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        held.write("someone else")
        held.flush()
        result = run_module("training_ranks", args, timeout=60)
    assert result["failed"]
    assert [(s["rank_id"], s["phase"]) for s in result["ranks"]] == [(0, "gate_timeout"), (1, "refused")]
    assert "device 1 is locked" in result["msg"] and "someone else" in result["msg"]


def test_duplicate_devices_are_refused_before_anything_starts(tmp_path):
    ranks = [{"rank_id": 0, "device_id": 0}, {"rank_id": 1, "device_id": 0}]
    result = run_module("training_ranks", ranks_args(tmp_path, ranks, ["true"]))
    assert result["failed"] and "may appear once only" in result["msg"]
    assert not (tmp_path / "run").exists()


def test_rank_params_and_a_rank_that_left_no_state(tmp_path):
    common = {"job_id": "j", "run_dir": str(tmp_path), "ranks": [{"rank_id": "3", "device_id": 1}], "argv": ["x"]}
    params = supervisor.rank_params(common, {"rank_id": "3", "device_id": 1, "local_rank": 0, "local_count": 2})
    assert params == {
        "job_id": "j",
        "run_dir": str(tmp_path),
        "argv": ["x"],
        "rank_id": 3,
        "device_id": 1,
        "local_rank": 0,
        "local_count": 2,
    }
    lost = supervisor.Supervisor(common).final_state({"rank_id": 3, "device_id": 1})
    assert lost["phase"] == "lost" and "without writing" in lost["error"]
    assert supervisor.summary([lost])[0] is False


def test_results_wait_for_the_supervisor_then_remove_its_file_and_pack_every_log(tmp_path):
    job_root, run_dir = tmp_path / "jobs", tmp_path / "run"
    ranks = [{"rank_id": 4, "device_id": 0}, {"rank_id": 5, "device_id": 1}, {"rank_id": 6, "device_id": 2}]
    control.record_job(str(job_root), {"job_id": "j", "run_dir": str(run_dir), "ranks": ranks})
    for rank in ranks[:2]:  # rank 6 never started: no log
        (run_dir / f"device_{rank['rank_id']}").mkdir(parents=True)
        (run_dir / f"device_{rank['rank_id']}" / "train.log").write_text(f"log of {rank['rank_id']}\n")
    async_file = tmp_path / "123.456"
    async_file.write_text(json.dumps({"started": True, "finished": False}))
    job = control.load_job(str(job_root), "j")
    assert results.collect(str(job_root), job, str(async_file), 0.3, False)["runner_finished"] is False
    assert async_file.exists()  # not finished: left alone
    threading.Timer(0.3, lambda: async_file.write_text(json.dumps({"changed": True, "ranks": [], "msg": "3 ranks exited 0"}))).start()
    got = results.collect(str(job_root), job, str(async_file), 10, True)
    assert got["runner"]["msg"] == "3 ranks exited 0" and got["runner_finished"]
    assert not async_file.exists()
    assert got["logs"] == ["device_4.log", "device_5.log"]
    assert os.path.dirname(got["archive"]) == str(job_root / "j")
    with tarfile.open(got["archive"]) as tar:
        assert sorted(tar.getnames()) == ["device_4.log", "device_5.log"]
    dest = tmp_path / "controller" / "logs" / "server0"
    assert unpack_logs(got["archive"], str(dest)) == ["device_4.log", "device_5.log"]
    assert (dest / "device_5.log").read_text() == "log of 5\n"


def test_unpack_takes_only_rank_logs(tmp_path):
    archive = tmp_path / "a.tar.gz"
    (tmp_path / "x").write_text("x")
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(tmp_path / "x", arcname="../escape.log")
        tar.add(tmp_path / "x", arcname="device_1.log")
        tar.add(tmp_path / "x", arcname="notes.txt")
    assert unpack_logs(str(archive), str(tmp_path / "out")) == ["device_1.log"]
    assert sorted(os.listdir(tmp_path / "out")) == ["device_1.log"]
    assert not (tmp_path / "escape.log").exists()


def test_a_command_that_cannot_start_ends_its_rank_with_127_and_says_why_in_its_log(tmp_path):
    thread, result = start(ranks_args(tmp_path, [{"rank_id": 0, "device_id": 0}], ["/nonexistent/train.sh"]))
    job = staged(tmp_path, 1)[0]
    control.open_gate(str(tmp_path / "jobs"), job, time.time())
    thread.join(60)
    assert result["failed"]
    assert [(s["rank_id"], s["phase"], s["rc"]) for s in result["ranks"]] == [(0, "exited", 127)]
    assert "No such file or directory" in result["ranks"][0]["error"]
    log = (tmp_path / "run" / "device_0" / "train.log").read_text()
    assert log.startswith("cannot start ['/nonexistent/train.sh']: ")


def wait_for(predicate, timeout=30.0):
    deadline = time.time() + timeout
    while not predicate():
        assert time.time() < deadline, "timed out"
        time.sleep(0.02)


@pytest.mark.parametrize("entry", ENTRIES)
def test_detached_module_returns_at_once_and_its_supervisor_writes_the_result_for_training_results(tmp_path, entry):
    args = ranks_args(tmp_path, [{"rank_id": 0, "device_id": 0}, {"rank_id": 1, "device_id": 1}], ["true"], detach=True)
    started = start_by(entry, args, timeout=60)
    results_file = str(tmp_path / "jobs" / "j" / "supervisor.json")
    assert started["results_file"] == results_file and started["started"] == 1 and started["finished"] == 0, started
    assert parent_of(started["supervisor_pid"]) != os.getpid()  # a daemon: not the module's child, nor ours
    job, _ranks = staged(tmp_path, 2)  # the module returned before the ranks ran: they wait at the gate
    assert json.loads(open(results_file).read())["started"] == 1
    control.open_gate(str(tmp_path / "jobs"), job, time.time())
    got = results.collect(str(tmp_path / "jobs"), job, results_file, 30, False)
    assert got["runner_finished"] and got["runner"]["msg"] == "2 ranks exited 0", got
    assert [s["rc"] for s in got["runner"]["ranks"]] == [0, 0]
    assert not os.path.exists(results_file)


@pytest.mark.parametrize("entry", ENTRIES)
def test_a_detached_start_refused_before_anything_starts_fails_the_module_call(tmp_path, entry):
    args = ranks_args(tmp_path, [{"rank_id": 0, "device_id": 0}, {"rank_id": 1, "device_id": 0}], ["true"], detach=True)
    result = start_by(entry, args, timeout=60)
    assert result.get("failed") and "every rank_id and every device_id may appear once only" in result["msg"], result
    assert not (tmp_path / "jobs" / "j" / "supervisor.json").exists()


# detach() forks; the module calls it in a process of its own, with one thread. The test does the same in a fresh
# interpreter: forked from pytest's (whose xdist worker runs threads) Python 3.12+ warns that a fork may deadlock.
DETACH = """
import os, sys
from ansible_collections.ascend.cluster.plugins.module_utils._job import supervisor
def done():
    return {"changed": True, "msg": "done", "sid": os.getsid(0)}
def boom():
    raise RuntimeError("boom")
print(supervisor.detach({"done": done, "boom": boom}[sys.argv[1]], sys.argv[2]), os.getsid(0))
"""


def test_detach_runs_the_work_in_its_own_session_and_records_a_crash(tmp_path):
    cases = [
        ("done", lambda r, caller_sid: r["msg"] == "done" and r["sid"] not in (caller_sid, os.getsid(0))),
        ("boom", lambda r, _caller_sid: r["failed"] and "the supervisor crashed" in r["msg"] and "boom" in r["msg"]),
    ]
    env = dict(os.environ, PYTHONPATH=str(ensure_collection_link()))
    for index, (work, check) in enumerate(cases):
        path = str(tmp_path / f"result{index}.json")
        out = subprocess.run([sys.executable, "-c", DETACH, work, path], env=env, capture_output=True, text=True, timeout=60, check=True)
        pid, caller_sid = (int(word) for word in out.stdout.split())
        assert pid > 0
        wait_for(lambda path=path: "started" not in json.loads(open(path).read()))
        assert check(json.loads(open(path).read()), caller_sid), open(path).read()


@pytest.mark.parametrize("entry", ENTRIES)
def test_one_detached_call_records_the_job_with_its_table_starts_and_waits_until_staged(tmp_path, entry):
    ranks = [{"rank_id": 0, "device_id": 0}, {"rank_id": 1, "device_id": 1}]
    table = json.dumps({"version": "1.0", "server_count": "1"}, indent=4) + "\n"
    args = ranks_args(tmp_path, ranks, ["true"], detach=True, record=True, stage_timeout=30, rank_table=table)
    own = tmp_path / "run" / "rank_table.json"  # the job's own copy, in its run directory
    args["rank_table_path"] = str(own)
    (tmp_path / "jobs" / "j" / "job.json").unlink()  # the call records it
    result = start_by(entry, args, timeout=60)
    assert not result.get("failed"), result
    assert [r["state"] for r in result["staged"]["ranks"]] == ["staged", "staged"]
    assert own.read_text() == table and result["rank_table_steps"]
    digest = hashlib.sha256(table.encode()).hexdigest()
    assert (result["rank_table_path"], result["rank_table_sha256"]) == (str(own), digest)
    job = control.load_job(str(tmp_path / "jobs"), "j")
    assert (job["rank_table_path"], job["rank_table_sha256"]) == (str(own), digest)
    for rank in ranks:  # every rank reads the job's own copy
        assert f"RANK_TABLE_FILE={own}\n" in (tmp_path / "run" / f"device_{rank['rank_id']}" / "env.log").read_text()
    control.open_gate(str(tmp_path / "jobs"), job, time.time())
    got = results.collect(str(tmp_path / "jobs"), job, result["results_file"], 30, False)
    assert got["runner"]["msg"] == "2 ranks exited 0", got


@pytest.mark.parametrize("entry", ENTRIES)
def test_one_detached_call_refuses_a_table_on_disk_that_is_not_the_jobs_and_starts_nothing(tmp_path, entry):
    ranks = [{"rank_id": 0, "device_id": 0}]
    on_disk = tmp_path / "run" / "rank_table.json"
    on_disk.parent.mkdir()
    on_disk.write_text('{"version": "1.0", "server_count": "2"}\n')
    args = ranks_args(tmp_path, ranks, ["true"], detach=True, record=True, stage_timeout=30, write_rank_table=False)
    args.update(rank_table='{"version": "1.0", "server_count": "1"}\n', rank_table_path=str(on_disk))
    result = start_by(entry, args, timeout=60)
    assert result["failed"] and result["rank_table_mismatch"], result
    assert result["msg"] == (
        f"{on_disk} is not the job's rank table (it changed after the launch wrote it): nothing was started; "
        "check what else writes the job's run directory, then launch again"
    )
    assert not (tmp_path / "jobs" / "j" / "supervisor.json").exists() and [p.name for p in (tmp_path / "run").iterdir()] == [
        "rank_table.json"
    ]


@pytest.mark.parametrize("entry", ENTRIES)
def test_the_stage_writes_the_jobs_run_files_before_its_ranks_start_mode_0644(tmp_path, entry):
    ranks = [{"rank_id": 0, "device_id": 0}, {"rank_id": 1, "device_id": 1}]
    script = "import sys\nprint('{{ not a template }}', file=sys.stderr)\n"
    # each rank exits 0 only when the script is there
    args = ranks_args(tmp_path, ranks, ["sh", "-c", f"test -f {tmp_path}/run/check.py"], detach=True, stage_timeout=30)
    args["run_files"] = {"check.py": script, "empty.txt": ""}
    result = start_by(entry, args, timeout=60)
    assert not result.get("failed"), result
    for name, text in args["run_files"].items():
        assert (tmp_path / "run" / name).read_text() == text
        assert (tmp_path / "run" / name).stat().st_mode & 0o777 == 0o644
    job, _ranks = staged(tmp_path, 2)
    control.open_gate(str(tmp_path / "jobs"), job, time.time())
    got = results.collect(str(tmp_path / "jobs"), job, result["results_file"], 30, False)
    assert got["runner"]["msg"] == "2 ranks exited 0", got


@pytest.mark.parametrize("name", ["../escape.py", "a/b.py", "", ".."])
def test_a_run_file_that_is_not_a_plain_name_is_refused_and_nothing_is_written(tmp_path, name):
    args = ranks_args(tmp_path, [{"rank_id": 0, "device_id": 0}], ["true"], detach=True, stage_timeout=30)
    args["run_files"] = {"ok.py": "", name: "x"}
    result = start_by("training_job state=stage", args, timeout=60)
    assert result.get("failed") and result["msg"] == f"run_files: {name!r} is not a plain file name (no '/', not '.' or '..')", result
    assert not (tmp_path / "run").exists() and not (tmp_path / "escape.py").exists()


def test_a_run_file_whose_text_is_not_a_string_is_refused(tmp_path):
    args = ranks_args(tmp_path, [{"rank_id": 0, "device_id": 0}], ["true"], detach=True, stage_timeout=30)
    args["run_files"] = {"check.py": ["not", "text"]}
    result = start_by("training_job state=stage", args, timeout=60)
    assert result.get("failed") and result["msg"] == "run_files: the text of check.py is a list, not a string", result
    assert not (tmp_path / "run").exists()


def test_staging_failure_names_every_rank_that_could_not_stage():
    cases = [
        ([{"rank_id": 0, "device_id": 0, "state": "staged", "error": None}], None),
        (
            [
                {"rank_id": 0, "device_id": 0, "state": "staged", "error": None},
                {"rank_id": 1, "device_id": 3, "state": "failed", "error": "device 3 is locked by pid 7"},
                {"rank_id": 2, "device_id": 4, "state": "pending", "error": None},
            ],
            "ranks could not stage, nothing was started: rank 1 (device 3): device 3 is locked by pid 7; rank 2 (device 4): pending",
        ),
    ]
    for ranks, message in cases:
        assert control.staging_failure(ranks) == message


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"ranks": None}, "stage: missing required arguments: ranks"),
        ({"command": "true"}, "stage: parameters are mutually exclusive: argv|command"),
        ({"launcher": "mpirun"}, "stage: value of launcher must be one of: per_device, torchrun, msrun, got: mpirun"),
    ],
)
def test_training_job_stage_validates_its_options_as_training_ranks_does_and_starts_nothing(tmp_path, change, message):
    args = ranks_args(tmp_path, [{"rank_id": 0, "device_id": 0}], ["true"], detach=True)
    args.update({k: v for k, v in change.items() if v is not None})
    for name in [k for k, v in change.items() if v is None]:
        del args[name]
    result = start_by("training_job state=stage", args, timeout=60)
    assert result.get("failed") and result["msg"].startswith(message), result
    assert not (tmp_path / "jobs" / "j" / "supervisor.json").exists() and not (tmp_path / "run").exists()


def test_training_job_stage_needs_its_options_and_is_not_run_in_check_mode(tmp_path):
    result = run_module("training_job", {"state": "stage"}, timeout=60)
    assert result.get("failed") and "state is stage but all of the following are missing: stage" in result["msg"], result
    args = ranks_args(tmp_path, [{"rank_id": 0, "device_id": 0}], ["true"], detach=True, stage_timeout=30)
    result = start_by("training_job state=stage", args, check=True, timeout=60)
    assert result.get("skipped") and not result.get("changed") and "not run in check mode" in result["msg"], result
    assert not (tmp_path / "jobs" / "j" / "supervisor.json").exists() and not (tmp_path / "run").exists()


def test_training_job_results_reads_what_training_results_reads_and_validates_its_options(tmp_path):
    args = ranks_args(tmp_path, [{"rank_id": 0, "device_id": 0}, {"rank_id": 1, "device_id": 1}], ["true"], detach=True)
    started = start_by("training_job state=stage", args, timeout=60)
    job, _ranks = staged(tmp_path, 2)
    control.open_gate(str(tmp_path / "jobs"), job, time.time())
    asked = {"job_id": "j", "job_root": str(tmp_path / "jobs"), "results_file": started["results_file"], "timeout": 30, "poll": True}
    got = run_module("training_job", {"state": "results", "results": asked}, timeout=60)
    assert got["changed"] and got["runner_finished"] and got["runner"]["msg"] == "2 ranks exited 0", got
    assert [r["state"] for r in got["ranks"]] == ["done", "done"] and got["failed_rank"] is None, got
    assert not os.path.exists(started["results_file"])
    missing = run_module("training_job", {"state": "results", "results": {"job_root": str(tmp_path / "jobs")}}, timeout=60)
    assert missing.get("failed") and missing["msg"] == "results: missing required arguments: job_id", missing
    unknown = run_module("training_job", {"state": "results", "results": dict(asked, job_id="nope")}, timeout=60)
    assert unknown.get("failed") and "nope" in unknown["msg"], unknown
