"""The job-file protocol (_job_files): phases as written, abort lines, the watcher's shell probe."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from ansible_collections.ascend.cluster.plugins.module_utils import _job_files as files


@pytest.mark.parametrize("phase", files.PHASES)
def test_phase_text_is_what_write_json_writes(tmp_path, phase):
    path = str(tmp_path / files.STATE_FILE)
    files.write_json(path, {"phase": phase, "rc": 0, "error": 'not "phase": "%s"' % phase, "zzz": [1, 2]})
    text = open(path).read()
    assert text.count(files.phase_text(phase)) == 1  # the phase itself; the same words in a string are escaped
    assert json.loads(text)["phase"] == phase


@pytest.mark.parametrize(
    "args, line, parsed",
    [
        ((1, 3), "rank 1 failed (rc=3)", {"rank_id": 1, "rc": 3, "why": None}),
        ((12, -9, "killed by SIGKILL (signal 9); x"), "rank 12 failed (rc=-9): killed by SIGKILL (signal 9); x", {"rank_id": 12, "rc": -9}),
    ],
)
def test_failed_line_round_trip(args, line, parsed):
    assert files.failed_line(*args) == line
    found = files.parse_abort_line(line + "\n")
    assert {k: found[k] for k in parsed} == parsed and found["reason"] == line


@pytest.mark.parametrize("line", ["stop requested", "another server failed", "rank x failed (rc=3)", "rank 1 failed", ""])
def test_other_abort_lines_are_reasons_not_failures(line):
    assert files.parse_abort_line(line) == {"reason": line, "rank_id": None, "rc": None, "why": None}


def test_abort_file_keeps_the_first_reason_first(tmp_path):
    assert files.read_abort(str(tmp_path)) is None
    files.record_abort(str(tmp_path), "stopped by\nsomeone")
    files.record_abort(str(tmp_path), "another server failed")
    assert files.read_abort(str(tmp_path)) == "stopped by someone"
    assert (tmp_path / files.ABORT_FILE).read_text() == "stopped by someone\nanother server failed\n"


def run_probe(job_dir, rank_dirs):
    command = files.probe_command(str(job_dir), [str(d) for d in rank_dirs])
    return files.parse_probe(subprocess.run(["sh", "-c", command], capture_output=True, text=True, check=True).stdout)


def test_probe_reads_the_abort_reason_and_counts_ranks_in_a_final_phase(tmp_path):
    job_dir, rank_dirs = tmp_path / "job", [tmp_path / f"device_{r}" for r in range(6)]
    job_dir.mkdir()
    for rank_dir, phase in zip(rank_dirs, files.PHASES):  # staging, staged, running, exited, refused, aborted
        rank_dir.mkdir()
        files.write_json(str(rank_dir / files.STATE_FILE), {"phase": phase, "error": '"phase": "exited"'})
    missing = tmp_path / "device_9"
    assert run_probe(job_dir, rank_dirs + [missing]) == {"abort": None, "final": 3}
    files.record_abort(str(job_dir), "it's stopped: $(touch pwned) `x`")
    assert run_probe(job_dir, rank_dirs) == {"abort": "it's stopped: $(touch pwned) `x`", "final": 3}
    assert not os.path.exists("pwned")
    assert run_probe(job_dir, []) == {"abort": "it's stopped: $(touch pwned) `x`", "final": 0}


@pytest.mark.parametrize("stdout", ["", "FINAL 3\n", "ABORT x\n"])
def test_a_probe_that_did_not_run_through_is_none(stdout):
    assert files.parse_probe(stdout) is None
