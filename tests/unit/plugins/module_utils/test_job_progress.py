"""Stall detection: the progress meter (with a fake clock), its words, py-spy's stacks, and real runners that stall.

The runner tests start ``training_ranks`` as a subprocess, as test_job_supervisor does, and play the controller.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time

import pytest

from ansible_collections.ascend.cluster.plugins.module_utils._job import control, progress
from ansible_collections.ascend.cluster.plugins.module_utils._job.command import resolve_launch
from ansible_collections.ascend.cluster.plugins.module_utils._job.progress import ProgressMeter
from tests.helpers.ansible_cli import run_module
from tests.helpers.procs import alive
from tests.unit.plugins.module_utils.test_job_supervisor import ranks_args, staged

# --- the meter, with a fake clock: the test says what time it is


def write(path, text: str) -> None:
    with open(path, "a") as handle:
        handle.write(text)


def test_any_growth_of_the_log_is_progress_and_silence_counts_from_the_start(tmp_path):
    log = tmp_path / "train.log"
    meter = ProgressMeter(str(log), 5, "", started=100.0)
    assert meter.sample(104.9) is None  # no log yet: silent since the start, not for 5 s yet
    assert meter.sample(105.0) == 5.0
    write(log, "loading")  # a partial line is output too
    assert meter.sample(106.0) is None
    assert meter.sample(110.9) is None
    write(log, " done\n")
    assert meter.sample(111.0) is None
    assert meter.sample(115.5) is None
    assert meter.sample(116.0) == 5.0
    assert meter.sample(117.0) == 6.0  # still silent: it stays stalled
    assert meter.offset == log.stat().st_size


def test_with_a_regex_only_complete_new_lines_matching_it_count(tmp_path):
    log = tmp_path / "train.log"
    write(log, "step 1 loss 1000\n")  # written before the meter's first look: it counts, as a first progress
    meter = ProgressMeter(str(log), 3, r"step \d+", started=0.0)
    assert meter.sample(1.0) is None and meter.last_progress == 1.0
    write(log, "WARNING: slow allreduce\nheartbeat\n")  # output, but no matching line
    assert meter.sample(2.0) is None and meter.last_progress == 1.0
    write(log, "step 2 lo")  # the matching line is not complete yet
    assert meter.sample(3.0) is None and meter.last_progress == 1.0
    assert meter.sample(4.0) == 3.0
    write(log, "ss 500\n")  # now it is: progress
    assert meter.sample(4.5) is None and meter.last_progress == 4.5
    write(log, "no newline at the end, step 3")
    assert meter.sample(7.5) == 3.0


def test_a_regex_meter_reads_only_the_new_bytes_in_chunks_and_keeps_a_bounded_partial_line(tmp_path, monkeypatch):
    monkeypatch.setattr(progress, "READ_CHUNK", 4)  # lines split across reads
    monkeypatch.setattr(progress, "MAX_PARTIAL", 16)
    log = tmp_path / "train.log"
    meter = ProgressMeter(str(log), 10, "step", started=0.0)
    write(log, "x" * 1000)  # one long line in the making
    assert not meter.news() and meter.offset == 1000 and len(meter.partial) == 16
    write(log, "step\n")
    assert meter.news()
    assert not meter.news()  # nothing new: nothing read again
    reads = []
    real_open = open

    def counting_open(*args, **kwargs):
        reads.append(args[0])
        return real_open(*args, **kwargs)

    monkeypatch.setattr("builtins.open", counting_open)
    assert not meter.news() and reads == []  # no new bytes: one stat, no read


def test_a_log_truncated_or_replaced_is_read_again_from_its_start(tmp_path):
    log = tmp_path / "train.log"
    write(log, "step 1\nstep 2\n")
    meter = ProgressMeter(str(log), 10, r"step \d", started=0.0)
    assert meter.news()
    log.write_text("step 3\n")  # shorter than what was read
    assert meter.news() and meter.offset == len("step 3\n")


def test_stall_timeout_zero_never_stalls(tmp_path):
    meter = ProgressMeter(str(tmp_path / "train.log"), 0, "", started=0.0)
    assert meter.sample(1e9) is None


@pytest.mark.parametrize(
    ("silent", "regex", "last", "words"),
    [
        (20.3, None, "step 3 loss 333", 'stalled: no progress for 20 s; last line: "step 3 loss 333"'),
        (20.0, r"step \d+", "  WARNING: x  ", "stalled: no line matching 'step \\d+' for 20 s; last line: \"WARNING: x\""),
        (600.0, None, None, "stalled: no progress for 600 s; the log is empty"),
        (3, None, "a" * 300, 'stalled: no progress for 3 s; last line: "...' + "a" * 200 + '"'),
    ],
)
def test_the_words_of_a_stall(tmp_path, silent, regex, last, words):
    record = ProgressMeter(str(tmp_path / "train.log"), 1, regex).stalled(silent, last)
    assert progress.why(record) == words
    assert record["stack"] == [] and json.loads(json.dumps(record)) == record  # it goes into state.json as it is


def test_a_bad_regex_is_refused_naming_it():
    with pytest.raises(ValueError, match=r"^progress_regex 'step \(' is not a valid regular expression \(missing \), unterminated"):
        progress.compile_progress("step (")
    assert progress.compile_progress("") is None and progress.compile_progress(None) is None
    params = {"argv": ["python3", "train.py"], "progress_regex": "[unclosed"}
    with pytest.raises(ValueError, match=r"^progress_regex '\[unclosed' is not a valid regular expression"):
        resolve_launch(params)  # what training_rank and the stage check before anything starts


# --- the rank's processes, and py-spy's stacks of its Python ones

FAKE_PY_SPY = """#!/bin/sh
# py-spy dump --pid P, as far as the runner needs it
test "$1 $2" = "dump --pid" || exit 2
if [ -n "${FAKE_PY_SPY_FAIL:-}" ]; then echo "Error: Permission denied (os error 13)"; echo "try sudo"; exit 1; fi
echo "Process $3: python3 -c ..."
echo "Python v3.12 (/usr/bin/python3)"
echo
echo 'Thread 1 (idle): "MainThread"'
i=0; while [ $i -lt 100 ]; do echo "    wait_collective (train.py:$i)"; i=$((i+1)); done
"""


@pytest.fixture
def py_spy(tmp_path, monkeypatch):
    """A fake ``py-spy`` first on PATH; its directory."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "py-spy").write_text(FAKE_PY_SPY)
    (bin_dir / "py-spy").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return bin_dir


def test_the_python_processes_of_a_group_get_their_stacks_taken_bounded(py_spy, monkeypatch):
    group = subprocess.Popen(["sh", "-c", f"{sys.executable} -c 'import time; time.sleep(30)' & sleep 30; wait"], start_new_session=True)
    try:
        deadline = time.time() + 10
        # three members, the python one past its exec (a child just forked by sh is still sh for a moment)
        while not (len(progress.group_pids(group.pid)) >= 3 and progress.python_pids(progress.group_pids(group.pid))):
            if time.time() > deadline:
                break
            time.sleep(0.05)
        members = progress.group_pids(group.pid)
        pythons = progress.python_pids(members)
        assert len(members) == 3 and len(pythons) == 1 and group.pid not in pythons  # sh, sleep and python3
        stack = progress.py_spy_stacks(members)
        assert stack[0] == f"Process {pythons[0]}: python3 -c ..." and len(stack) == progress.STACK_LINES
        assert stack[-1] == "    wait_collective (train.py:56)"  # three header lines, then frames 0-56 (blank lines dropped)
        monkeypatch.setenv("FAKE_PY_SPY_FAIL", "1")
        assert progress.py_spy_stacks(members) == [
            f"py-spy dump --pid {pythons[0]} failed (rc=1): Error: Permission denied (os error 13) try sudo"
        ]
        monkeypatch.setenv("PATH", "/nonexistent")
        assert progress.py_spy_stacks(members) == []  # no py-spy: no stacks, nothing else
    finally:
        os.killpg(group.pid, 9)
        group.wait()


# --- real runners (training_ranks) with a short stall_timeout

TWO = [{"rank_id": 0, "device_id": 0}, {"rank_id": 1, "device_id": 1}]


def run_job(tmp_path, ranks, argv, env=None, **extra):
    """Start the ranks, open the gate, wait for the end: ``(job, module result, seconds from gate to end)``."""
    args = ranks_args(tmp_path, ranks, argv, **extra)
    result: dict = {}
    thread = threading.Thread(target=lambda: result.update(run_module("training_ranks", args, env=env, timeout=90)))
    thread.start()
    job = staged(tmp_path, len(ranks))[0]
    began = time.time()
    control.open_gate(str(tmp_path / "jobs"), job, began)
    thread.join(90)
    return job, result, time.time() - began


def test_a_rank_that_prints_once_then_hangs_is_stopped_and_fails_the_job_naming_its_silence(tmp_path):
    # rank 1 prints a step, then hangs (a collective that never completes); rank 0 keeps printing
    script = 'echo "step 1 loss 1000"; if [ "$RANK_ID" = 1 ]; then exec sleep 60; fi; while :; do echo tick; sleep 0.2; done'
    job, result, took = run_job(tmp_path, TWO, ["sh", "-c", script], stall_timeout=1.5)
    assert took < 15, took
    abort = (tmp_path / "jobs" / "j" / "abort").read_text()
    assert re.fullmatch(r'rank 1 failed \(rc=-15\): stalled: no progress for [23] s; last line: "step 1 loss 1000"\n', abort), abort
    states = control.rank_states(str(tmp_path / "jobs"), job)
    assert [(r["state"], r["rc"]) for r in states] == [("stopped", -15), ("failed", -15)]
    assert states[1]["error"] == abort.split(": ", 1)[1].strip()
    assert control.first_failure(states)["rank_id"] == 1  # type: ignore[index]
    state = json.loads((tmp_path / "run" / "device_1" / "state.json").read_text())
    assert state["stalled"]["last_line"] == "step 1 loss 1000" and 1.5 <= state["stalled"]["silent_s"] < 3.5
    assert state["stalled"]["stack"] == [] and state["error"] == states[1]["error"]  # no Python in it to dump
    assert result["failed"] and "rank 1: stalled: no progress for" in result["msg"]
    log = (tmp_path / "run" / "device_1" / "train.log").read_text().splitlines()
    assert log == ["step 1 loss 1000", f"ascend.cluster: {states[1]['error']}; stopping the rank"]
    assert not any(alive(r["pid"]) for r in states)


def test_ranks_that_keep_printing_are_never_stopped(tmp_path):
    script = "for i in 1 2 3 4 5 6 7 8 9 10 11 12; do echo step $i; sleep 0.25; done"
    job, result, _took = run_job(tmp_path, TWO, ["sh", "-c", script], stall_timeout=1.0)
    assert not result.get("failed"), result
    assert not (tmp_path / "jobs" / "j" / "abort").exists()
    assert [r["state"] for r in control.rank_states(str(tmp_path / "jobs"), job)] == ["done", "done"]


def test_stall_timeout_zero_never_stops_a_silent_rank(tmp_path):
    job, result, took = run_job(tmp_path, TWO[:1], ["sh", "-c", "echo once; sleep 2.5"], stall_timeout=0)
    assert not result.get("failed") and took >= 2.5, result
    assert [r["state"] for r in control.rank_states(str(tmp_path / "jobs"), job)] == ["done"]


def test_with_a_regex_a_chatty_rank_without_steps_stalls_and_its_python_stacks_are_kept(tmp_path, py_spy):
    # a Python rank that keeps printing, but no step line after the first: with the regex, that is a stall
    code = "import sys, time\nprint('step 1 loss 1000', flush=True)\nwhile True:\n    print('heartbeat', flush=True)\n    time.sleep(0.2)\n"
    env = {"PATH": os.environ["PATH"]}  # with the fake py-spy first
    job, result, took = run_job(tmp_path, TWO[:1], [sys.executable, "-c", code], env=env, stall_timeout=1.5, progress_regex=r"step \d+")
    assert took < 15 and result["failed"], result
    abort = (tmp_path / "jobs" / "j" / "abort").read_text()
    assert re.fullmatch(r"rank 0 failed \(rc=-15\): stalled: no line matching 'step \\d\+' for [23] s; last line: \"heartbeat\"\n", abort)
    state = json.loads((tmp_path / "run" / "device_0" / "state.json").read_text())
    assert state["stalled"]["regex"] == r"step \d+"
    assert state["stalled"]["stack"][0] == f"Process {state['pid']}: python3 -c ..." and len(state["stalled"]["stack"]) == 60
    log = (tmp_path / "run" / "device_0" / "train.log").read_text()
    assert "ascend.cluster: stalled: no line matching" in log and f"Process {state['pid']}: python3 -c ..." in log
    assert [r["state"] for r in control.rank_states(str(tmp_path / "jobs"), job)] == ["failed"]


@pytest.mark.parametrize("entry", ["training_ranks", "training_job state=stage", "training_rank"])
def test_a_bad_regex_is_refused_before_anything_starts(tmp_path, entry):
    args = ranks_args(tmp_path, TWO[:1], ["true"], detach=True, stage_timeout=30, progress_regex="step (")
    if entry == "training_rank":
        args = {k: v for k, v in args.items() if k not in ("ranks", "detach", "stage_timeout")}
        args.update(rank_id=0, device_id=0, local_rank=0)
    if entry == "training_job state=stage":
        result = run_module("training_job", {"state": "stage", "stage": args}, timeout=60)
    else:
        result = run_module(entry, args, timeout=60)
    assert result.get("failed") and result["msg"].startswith("progress_regex 'step (' is not a valid regular expression"), result
    assert not (tmp_path / "run").exists() and not (tmp_path / "jobs" / "j" / "supervisor.json").exists()
