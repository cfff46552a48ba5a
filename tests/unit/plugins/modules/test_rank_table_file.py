"""rank_table_file: the pure plan (module_utils/_text_file.py) and the module itself, run directly
on a temp directory: directory created, atomic write with the mode, chmod only, check mode and diff,
a second run changing nothing, and the refusals."""

from __future__ import annotations

import json
import stat

import pytest

from ansible_collections.ascend.cluster.plugins.module_utils._text_file import file_state, plan_text_file
from tests.helpers.ansible_cli import run_module

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
    checked = run_module("rank_table_file", {"path": str(path), "content": TABLE}, check=True, diff=True)
    assert checked["changed"] and checked["steps"] == ["mkdir", "write"], checked
    assert checked["diff"]["before"] == "" and checked["diff"]["after"] == TABLE
    assert not path.parent.exists()  # check mode wrote nothing
    first = run_module("rank_table_file", {"path": str(path), "content": TABLE})
    assert first["changed"] and first["steps"] == ["mkdir", "write"], first
    assert path.read_text() == TABLE and stat.S_IMODE(path.stat().st_mode) == 0o644
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o755
    assert [p.name for p in path.parent.iterdir()] == ["rank_table.json"]  # no temp file left behind
    again = run_module("rank_table_file", {"path": str(path), "content": TABLE})
    assert not again["changed"] and again["steps"] == [], again


def test_the_module_fixes_only_the_mode_when_the_text_is_there(tmp_path):
    path = tmp_path / "rank_table.json"
    path.write_text(TABLE)
    path.chmod(0o600)
    result = run_module("rank_table_file", {"path": str(path), "content": TABLE})
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
    result = run_module("rank_table_file", {"path": str(path), **args})
    assert result.get("failed") and message in result["msg"], result
    assert not path.exists()


def test_apply_text_file_writes_then_changes_nothing_and_json_file_matches_reads_back(tmp_path):
    from ansible_collections.ascend.cluster.plugins.module_utils._text_file import apply_text_file, json_file_matches

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


@pytest.mark.parametrize(
    ("args", "written", "failed"),
    [
        ({"write_rank_table": True}, TABLE, False),
        ({"write_rank_table": False}, TABLE, False),  # the rank_table role wrote it: only compared
        ({"write_rank_table": False}, "{}\n", True),  # another table on disk: nothing recorded
    ],
    ids=["written and recorded", "only compared", "another table"],
)
def test_training_job_record_writes_and_compares_the_table_before_recording(tmp_path, args, written, failed):
    path = tmp_path / "rank_table.json"
    if not args["write_rank_table"]:
        path.write_text(written)
    record = {
        "state": "record",
        "job_id": "j1",
        "run_dir": str(tmp_path / "run"),
        "job_root": str(tmp_path / "jobs"),
        "ranks": [{"rank_id": 0, "device_id": 0}],
        "rank_table_path": str(path),
        "rank_table": TABLE,
        **args,
    }
    result = run_module("training_job", record)
    assert bool(result.get("failed")) is failed, result
    assert (tmp_path / "jobs" / "j1" / "job.json").exists() is not failed
    if failed:
        assert result["rank_table_mismatch"] and result["msg"] == f"{path} is not the job's rank table: re-run the rank_table role"
    else:
        assert path.read_text() == TABLE and stat.S_IMODE(path.stat().st_mode) == 0o644
        assert result["rank_table_steps"] == (["write"] if args["write_rank_table"] else [])
