"""rank_table_file: the pure plan (module_utils/_host/text_file.py) and the module itself, run directly
on a temp directory: directory created, atomic write with the mode, chmod only, check mode and diff,
a second run changing nothing, and the refusals."""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import stat

import pytest

from ansible_collections.ascend.cluster.plugins.module_utils._host.text_file import file_state, plan_text_file
from tests.helpers.ansible_cli import run_module


def no_jobs(tmp_path):
    """The module's job records and device locks, under the test's own directory (none held: nothing refuses)."""
    return {"job_root": str(tmp_path / "jobs"), "lock_dir": str(tmp_path / "locks")}


TABLE = json.dumps({"version": "1.0", "server_count": "1", "server_list": [], "status": "completed"}, indent=4) + "\n"


@pytest.mark.parametrize(
    ("state", "steps"),
    [
        ({"directory_exists": False, "text": None, "mode": None}, ["mkdir", "write"]),
        ({"directory_exists": True, "text": None, "mode": None}, ["write"]),
        ({"directory_exists": True, "text": "{}\n", "mode": 0o600}, ["write"]),  # the write sets the mode as well
        ({"directory_exists": True, "text": TABLE, "mode": 0o600}, ["chmod"]),
        ({"directory_exists": True, "text": TABLE, "mode": 0o644}, []),
    ],
    ids=["no directory", "no file", "other text", "other mode only", "all there"],
)
def test_plan_text_file_lists_only_the_steps_still_needed(state, steps):
    assert plan_text_file(state, TABLE, 0o644) == steps


def test_file_state_reads_the_directory_text_and_mode(tmp_path):
    path = tmp_path / "t.json"
    assert file_state(str(tmp_path / "no" / "t.json")) == {"directory_exists": False, "text": None, "mode": None}
    assert file_state(str(path)) == {"directory_exists": True, "text": None, "mode": None}
    path.write_text(TABLE)
    path.chmod(0o640)
    assert file_state(str(path)) == {"directory_exists": True, "text": TABLE, "mode": 0o640}


def test_the_module_creates_the_directory_writes_once_and_then_changes_nothing(tmp_path):
    path = tmp_path / "ascend" / "rank_table.json"
    checked = run_module("rank_table_file", {**no_jobs(tmp_path), "path": str(path), "content": TABLE}, check=True, diff=True)
    assert checked["changed"] and checked["steps"] == ["mkdir", "write"], checked
    assert checked["diff"]["before"] == "" and checked["diff"]["after"] == TABLE
    assert not path.parent.exists()  # check mode wrote nothing
    first = run_module("rank_table_file", {**no_jobs(tmp_path), "path": str(path), "content": TABLE})
    assert first["changed"] and first["steps"] == ["mkdir", "write"], first
    assert path.read_text() == TABLE and stat.S_IMODE(path.stat().st_mode) == 0o644
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o755
    assert [p.name for p in path.parent.iterdir()] == ["rank_table.json"]  # no temp file left behind
    again = run_module("rank_table_file", {**no_jobs(tmp_path), "path": str(path), "content": TABLE})
    assert not again["changed"] and again["steps"] == [], again


def test_the_module_fixes_only_the_mode_when_the_text_is_there(tmp_path):
    path = tmp_path / "rank_table.json"
    path.write_text(TABLE)
    path.chmod(0o600)
    result = run_module("rank_table_file", {**no_jobs(tmp_path), "path": str(path), "content": TABLE})
    assert result["changed"] and result["steps"] == ["chmod"], result
    assert stat.S_IMODE(path.stat().st_mode) == 0o644


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"content": "version: 1.0\n"}, "content is not JSON"),
        ({"content": TABLE, "mode": "rw-r--r--"}, "mode 'rw-r--r--' is not octal permission bits: give it as 0644"),
    ],
    ids=["not JSON", "mode not octal"],
)
def test_bad_input_fails_naming_the_fix_and_writes_nothing(tmp_path, args, message):
    path = tmp_path / "rank_table.json"
    result = run_module("rank_table_file", {**no_jobs(tmp_path), "path": str(path), **args})
    assert result.get("failed") and message in result["msg"], result
    assert not path.exists()


def test_apply_text_file_writes_then_changes_nothing_and_json_file_matches_reads_back(tmp_path):
    from ansible_collections.ascend.cluster.plugins.module_utils._host.text_file import apply_text_file, json_file_matches

    path = tmp_path / "etc" / "rank_table.json"
    assert not json_file_matches(str(path), TABLE)  # missing
    assert apply_text_file(str(path), TABLE, 0o644, check_mode=True) == {"steps": ["mkdir", "write"], "before": None}
    assert not path.exists()
    assert apply_text_file(str(path), TABLE, 0o644)["steps"] == ["mkdir", "write"]
    assert apply_text_file(str(path), TABLE, 0o644) == {"steps": [], "before": TABLE}
    assert json_file_matches(str(path), json.dumps(json.loads(TABLE)))  # the same document, other spacing
    assert not json_file_matches(str(path), TABLE.replace('"1"', '"2"'))
    path.write_text("{ not json")
    assert not json_file_matches(str(path), TABLE)


def record_args(tmp_path, table_path, **more):
    """training_job state=record of job j1 (rank 0 on device 0) with TABLE at ``table_path``."""
    return {
        "state": "record",
        "job_id": "j1",
        "run_dir": str(tmp_path / "run"),
        "job_root": str(tmp_path / "jobs"),
        "ranks": [{"rank_id": 0, "device_id": 0}],
        "rank_table_path": str(table_path),
        "rank_table": TABLE,
        **more,
    }


@pytest.mark.parametrize(
    ("args", "written", "failed"),
    [
        ({"write_rank_table": True}, TABLE, False),
        ({"write_rank_table": False}, TABLE, False),  # written by the caller: only compared
        ({"write_rank_table": False}, "{}\n", True),  # another table on disk: nothing recorded
    ],
    ids=["written and recorded", "only compared", "another table"],
)
def test_training_job_record_writes_and_compares_the_jobs_own_table_before_recording(tmp_path, args, written, failed):
    path = tmp_path / "run" / "rank_table.json"  # the job's own copy, in its run directory
    if not args["write_rank_table"]:
        path.parent.mkdir()
        path.write_text(written)
    result = run_module("training_job", record_args(tmp_path, path, **args))
    assert bool(result.get("failed")) is failed, result
    job_file = tmp_path / "jobs" / "j1" / "job.json"
    assert job_file.exists() is not failed
    if failed:
        assert result["rank_table_mismatch"] and result["msg"] == (
            f"{path} is not the job's rank table (it changed after the launch wrote it): nothing was started; "
            "check what else writes the job's run directory, then launch again"
        )
        return
    assert path.read_text() == TABLE
    # the launch's copy is read-only: nobody is meant to edit it
    assert stat.S_IMODE(path.stat().st_mode) == (0o444 if args["write_rank_table"] else 0o644)
    assert result["rank_table_steps"] == (["mkdir", "write"] if args["write_rank_table"] else [])  # the run dir is made
    # the digest of the file as written, returned and kept in the job record for the runners
    digest = hashlib.sha256(TABLE.encode()).hexdigest()
    assert (result["rank_table_path"], result["rank_table_sha256"]) == (str(path), digest)
    job = json.loads(job_file.read_text())
    assert (job["rank_table_path"], job["rank_table_sha256"]) == (str(path), digest)


def test_training_job_record_refuses_a_table_path_that_is_not_the_jobs_own_copy(tmp_path):
    """A job reads only its own copy: a shared path (what prepare and rank_table rewrite) is refused, nothing written."""
    shared = tmp_path / "etc" / "rank_table.json"
    result = run_module("training_job", record_args(tmp_path, shared))
    assert result.get("failed"), result
    own = tmp_path / "run" / "rank_table.json"
    assert result["msg"].startswith(f"rank_table_path {shared} is not job j1's own copy of its rank table, {own}: "), result
    assert not shared.exists() and not own.exists() and not (tmp_path / "jobs").exists()


def test_the_module_refuses_while_a_job_holds_the_servers_devices_and_writes_once_none_does(tmp_path):
    """Issue 26 item 7: the shared table is not rewritten under a running job. A recorded job with a live rank (its runner
    is this process) and a device lock held by another launch's runner both refuse it, in check mode too, naming each job
    and its devices; once the rank has ended and the lock is free, the table is written."""
    from ansible_collections.ascend.cluster.plugins.modules.rank_table_file import HELD

    jobs, locks, run = tmp_path / "jobs", tmp_path / "locks", tmp_path / "runs" / "j7"
    (jobs / "j7").mkdir(parents=True)
    (jobs / "j7" / "job.json").write_text(
        json.dumps({"job_id": "j7", "run_dir": str(run), "ranks": [{"rank_id": 0, "device_id": 2}, {"rank_id": 1, "device_id": 3}]})
    )
    for rank, phase in ((0, "running"), (1, "staged")):
        (run / f"device_{rank}").mkdir(parents=True)
        (run / f"device_{rank}" / "state.json").write_text(json.dumps({"phase": phase, "runner_pid": os.getpid(), "pgid": None}))
    locks.mkdir()
    lock = os.open(locks / "device_5.lock", os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    os.write(lock, b"job j8 rank 3 pid 4242")
    path = tmp_path / "etc" / "rank_table.json"
    held = ["job j7 holds devices 2, 3", "job j8 holds device 5"]
    try:
        for check in (True, False):
            result = run_module("rank_table_file", {**no_jobs(tmp_path), "path": str(path), "content": TABLE}, check=check)
            assert result.get("failed") and result["jobs"] == held, result
            assert result["msg"] == HELD % (path, "; ".join(held)), result
            assert result["msg"].startswith(
                f"the rank table {path} is not rewritten while a job holds this server's devices, nothing was changed: "
            )
            assert not path.parent.exists()
    finally:
        os.close(lock)
    (run / "device_0" / "state.json").write_text(json.dumps({"phase": "exited", "rc": 0, "runner_pid": os.getpid()}))
    (run / "device_1" / "state.json").write_text(json.dumps({"phase": "aborted", "runner_pid": os.getpid()}))
    written = run_module("rank_table_file", {**no_jobs(tmp_path), "path": str(path), "content": TABLE})
    assert written["changed"] and path.read_text() == TABLE, written
