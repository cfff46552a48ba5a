"""The job-file protocol (_job_files) and how a rank's end is classified (_job_control.classify).

The classification question: did we stop the rank (a stop reason was recorded before it died), or
did it die by a signal nobody of ours sent (the OOM killer's SIGKILL, a SIGSEGV)? The second is a
failure, in one-server jobs too.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from ansible_collections.ascend.cluster.plugins.module_utils._job import control, files
from ansible_collections.ascend.cluster.plugins.module_utils._job.procs import signal_death

from .test_job_supervisor import ranks_args, staged, start


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


def test_unstarted_line_round_trip():
    """A rank that never started its command (its table changed, its device refused): a failure without an exit code."""
    line = files.unstarted_line(13, "the rank table /r/t.json was changed: x")
    assert line == "rank 13 could not start: the rank table /r/t.json was changed: x"
    assert files.parse_abort_line(line + "\n") == {
        "reason": line,
        "rank_id": 13,
        "rc": None,
        "why": "the rank table /r/t.json was changed: x",
    }


@pytest.mark.parametrize("line", ["stop requested", "another server failed", "rank x failed (rc=3)", "rank 1 failed", ""])
def test_other_abort_lines_are_reasons_not_failures(line):
    assert files.parse_abort_line(line) == {"reason": line, "rank_id": None, "rc": None, "why": None}


def test_abort_file_keeps_the_first_reason_first(tmp_path):
    assert files.read_abort(str(tmp_path)) is None
    files.record_abort(str(tmp_path), "stopped by\nsomeone")
    files.record_abort(str(tmp_path), "another server failed")
    assert files.read_abort(str(tmp_path)) == "stopped by someone"
    assert (tmp_path / files.ABORT_FILE).read_text() == "stopped by someone\nanother server failed\n"


def test_the_abort_file_never_appears_empty(tmp_path, monkeypatch):
    """A runner that sees the file reads the reason: the first line is in it before it has its name."""
    seen: list = []
    real_link = os.link

    def link(src, dst):
        seen.append(open(src).read())  # what the file will hold the instant it appears
        return real_link(src, dst)

    monkeypatch.setattr(os, "link", link)
    files.record_abort(str(tmp_path), "Ctrl-C on the controller during the launch")
    files.record_abort(str(tmp_path), "stop requested")  # the file exists: appended, not linked
    assert seen == ["Ctrl-C on the controller during the launch\n"]
    assert sorted(p.name for p in tmp_path.iterdir()) == [files.ABORT_FILE]  # nothing left aside
    assert files.read_abort(str(tmp_path)) == "Ctrl-C on the controller during the launch"


def test_a_stop_that_loses_the_race_appends(tmp_path, monkeypatch):
    def link(_src, dst):
        with open(dst, "w") as other:  # another stop's file appeared between the check and the link
            other.write("another server failed\n")
        raise FileExistsError(dst)

    monkeypatch.setattr(os, "link", link)
    files.record_abort(str(tmp_path), "stop requested")
    assert (tmp_path / files.ABORT_FILE).read_text() == "another server failed\nstop requested\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == [files.ABORT_FILE]


STOP = "stopped by ascend.cluster.stop"
GONE = 2**22 + 1  # above any pid_max: no such process
STALL = {"silent_s": 20.2, "last_line": "step 3 loss 333", "regex": r"step \d+", "stack": []}

CLASSIFY: list[tuple[str, dict[str, Any] | None, bool, str]] = [
    # (id, state file, abort file exists now, rank state)
    ("no state yet", None, False, "pending"),
    ("staged, runner gone", {"phase": "staged", "runner_pid": GONE}, False, "failed"),
    ("running, all gone", {"phase": "running", "pgid": GONE, "runner_pid": GONE}, False, "failed"),
    (
        "running, runner killed -9, training left unsupervised",
        {"phase": "running", "pgid": os.getpgid(0), "runner_pid": GONE},
        False,
        "failed",
    ),
    ("running, runner alive", {"phase": "running", "pgid": GONE, "runner_pid": os.getpid()}, False, "running"),
    ("running, state without a runner pid: the training's group decides", {"phase": "running", "pgid": os.getpgid(0)}, False, "running"),
    ("exit 0", {"phase": "exited", "rc": 0, "stopped_by": None}, False, "done"),
    ("exit 0 after a stop", {"phase": "exited", "rc": 0, "stopped_by": STOP}, True, "done"),
    ("exit 1", {"phase": "exited", "rc": 1, "stopped_by": None}, False, "failed"),
    ("exit 1 after a stop", {"phase": "exited", "rc": 1, "stopped_by": STOP}, True, "failed"),
    ("our TERM", {"phase": "exited", "rc": -15, "stopped_by": STOP}, True, "stopped"),
    ("our KILL after the grace time", {"phase": "exited", "rc": -9, "stopped_by": STOP}, True, "stopped"),
    ("a shell reporting our TERM", {"phase": "exited", "rc": 143, "stopped_by": STOP}, True, "stopped"),
    ("SIGKILL from elsewhere (OOM killer)", {"phase": "exited", "rc": -9, "stopped_by": None}, True, "failed"),
    ("SIGKILL from elsewhere, one-server job", {"phase": "exited", "rc": -9, "stopped_by": None}, False, "failed"),
    ("SIGTERM from elsewhere", {"phase": "exited", "rc": -15, "stopped_by": None}, True, "failed"),
    ("SIGSEGV after a stop is still a crash", {"phase": "exited", "rc": -11, "stopped_by": STOP}, True, "failed"),
    ("SIGSEGV", {"phase": "exited", "rc": -11, "stopped_by": None}, False, "failed"),
    ("timed out", {"phase": "exited", "rc": -15, "stopped_by": None, "timed_out": True}, True, "failed"),
    ("stalled: its runner's TERM", {"phase": "exited", "rc": -15, "stopped_by": None, "stalled": STALL}, True, "failed"),
    ("stalled, then the job was stopped meanwhile", {"phase": "exited", "rc": -15, "stopped_by": STOP, "stalled": STALL}, True, "failed"),
    ("stalled, exited 0 on its runner's TERM", {"phase": "exited", "rc": 0, "stopped_by": None, "stalled": STALL}, False, "failed"),
    (
        "stalled under a launcher that stopped it",
        {"phase": "exited", "rc": 1, "stalled": STALL, "stopped_by_launcher": False},
        False,
        "failed",
    ),
    ("old runner: TERM with an abort file", {"phase": "exited", "rc": -15}, True, "stopped"),
    ("old runner: TERM without one", {"phase": "exited", "rc": -15}, False, "failed"),
    ("aborted at the gate", {"phase": "aborted", "stopped_by": STOP}, True, "stopped"),
    ("refused", {"phase": "refused", "error": "device 3 is locked"}, False, "failed"),
    ("gate timeout", {"phase": "gate_timeout"}, False, "failed"),
]


@pytest.mark.parametrize("state, aborted, expected", [c[1:] for c in CLASSIFY], ids=[c[0] for c in CLASSIFY])
def test_classify(state, aborted, expected):
    assert control.classify(state, aborted) == expected


def test_a_stalled_rank_says_how_long_it_was_silent_and_its_last_line():
    state = {"phase": "exited", "rc": -15, "stopped_by": None, "stalled": STALL, "error": "older words"}
    assert control.failure_cause(state, "failed") == 'stalled: no line matching \'step \\d+\' for 20 s; last line: "step 3 loss 333"'
    assert control.failure_cause({"phase": "exited", "rc": -15, "stopped_by": STOP}, "stopped") is None


def test_a_lost_rank_says_whether_its_training_was_left_running():
    orphan = {"phase": "running", "pgid": os.getpgid(0), "runner_pid": GONE}
    assert control.failure_cause(orphan, "failed") == control.RUNNER_DIED % os.getpgid(0)
    assert control.failure_cause(dict(orphan, pgid=GONE), "failed") == control.VANISHED


@pytest.mark.parametrize(
    "rc, ours, text",
    [
        (0, False, None),
        (1, False, None),
        (None, False, None),
        (-9, False, "killed by SIGKILL (signal 9) - not sent by ascend.cluster; the OOM killer?"),
        (
            -11,
            False,
            "killed by SIGSEGV (signal 11) - not sent by ascend.cluster; a segmentation fault in the training or a library it loads",
        ),
        (-15, False, "killed by SIGTERM (signal 15) - not sent by ascend.cluster"),
        (-15, True, "killed by SIGTERM (signal 15)"),
        (-200, False, "killed by signal 200 - not sent by ascend.cluster"),
    ],
)
def test_signal_death(rc, ours, text):
    assert signal_death(rc, ours) == text


def gated(tmp_path, count, argv):
    ranks = [{"rank_id": r, "device_id": r} for r in range(count)]
    thread, result = start(ranks_args(tmp_path, ranks, argv))
    job = staged(tmp_path, count)[0]
    control.open_gate(str(tmp_path / "jobs"), job, time.time())
    return job, thread, result


def test_a_rank_killed_by_sigkill_fails_and_stops_its_siblings(tmp_path):
    # rank 1 kills itself with SIGKILL 1 s after the gate, as the OOM killer would; nobody asked it to stop
    job, thread, _result = gated(tmp_path, 2, ["sh", "-c", 'if [ "$RANK_ID" = 1 ]; then sleep 1; kill -KILL $$; fi; exec sleep 60'])
    thread.join(60)
    why = "killed by SIGKILL (signal 9) - not sent by ascend.cluster; the OOM killer?"
    assert (tmp_path / "jobs" / "j" / "abort").read_text() == f"rank 1 failed (rc=-9): {why}\n"
    states = control.rank_states(str(tmp_path / "jobs"), job)
    assert [(r["state"], r["rc"]) for r in states] == [("stopped", -15), ("failed", -9)]
    assert states[1]["error"] == why
    assert control.first_failure(states)["rank_id"] == 1  # type: ignore[index]


def test_ranks_stopped_by_stop_are_stopped_and_say_by_whom(tmp_path):
    job, thread, _result = gated(tmp_path, 2, ["sleep", "60"])
    control.wait_staged(str(tmp_path / "jobs"), job, 10)
    deadline = time.time() + 30
    while not all(r["state"] == "running" for r in control.rank_states(str(tmp_path / "jobs"), job)):
        assert time.time() < deadline
        time.sleep(0.05)
    control.stop_job(str(tmp_path / "jobs"), job, 2.0, STOP)
    thread.join(60)
    states = control.rank_states(str(tmp_path / "jobs"), job)
    assert [(r["state"], r["rc"]) for r in states] == [("stopped", -15), ("stopped", -15)]
    for rank in range(2):
        assert json.loads((tmp_path / "run" / f"device_{rank}" / files.STATE_FILE).read_text())["stopped_by"] == STOP


def test_a_runner_sent_term_stops_the_job_and_says_so(tmp_path):
    job, thread, _result = gated(tmp_path, 2, ["sleep", "60"])
    deadline = time.time() + 30
    while not all(r["state"] == "running" for r in control.rank_states(str(tmp_path / "jobs"), job)):
        assert time.time() < deadline
        time.sleep(0.05)
    os.kill(control.rank_states(str(tmp_path / "jobs"), job)[0]["runner_pid"], signal.SIGTERM)
    thread.join(60)
    assert files.read_abort(str(tmp_path / "jobs" / "j")) == "the runner of rank 0 was sent SIGTERM"
    assert [r["state"] for r in control.rank_states(str(tmp_path / "jobs"), job)] == ["stopped", "stopped"]


def test_a_rank_whose_runner_records_its_exit_and_goes_between_the_read_and_the_check_is_not_lost(tmp_path, monkeypatch):
    # The runner writes "exited" and exits; a poll that read "running" just before finds the runner gone.
    rdir = files.rank_dir(str(tmp_path / "run"), 0)
    os.makedirs(rdir)
    state_file = os.path.join(rdir, files.STATE_FILE)
    files.write_json(state_file, {"phase": files.RUNNING, "runner_pid": GONE, "pid": GONE, "started": 1.0})

    def runner_finishes_now(pid):
        files.write_json(state_file, {"phase": files.EXITED, "runner_pid": GONE, "pid": GONE, "rc": 0, "started": 1.0, "ended": 2.0})
        return False

    monkeypatch.setattr(control, "pid_alive", runner_finishes_now)
    job = {"job_id": "j", "run_dir": str(tmp_path / "run"), "ranks": [{"rank_id": 0, "device_id": 0}]}
    (state,) = control.rank_states(str(tmp_path / "jobs"), job)
    assert (state["state"], state["rc"], state["error"]) == ("done", 0, None)


def test_a_rank_whose_runner_is_gone_without_a_record_is_still_lost(tmp_path):
    rdir = files.rank_dir(str(tmp_path / "run"), 0)
    os.makedirs(rdir)
    files.write_json(os.path.join(rdir, files.STATE_FILE), {"phase": files.RUNNING, "runner_pid": GONE, "pgid": GONE})
    job = {"job_id": "j", "run_dir": str(tmp_path / "run"), "ranks": [{"rank_id": 0, "device_id": 0}]}
    (state,) = control.rank_states(str(tmp_path / "jobs"), job)
    assert (state["state"], state["error"]) == ("failed", control.VANISHED)


# ---- the controller's side of the protocol: one shell line each, on real files


def test_the_controllers_read_and_stop_on_real_files(tmp_path):
    job = tmp_path / "J"
    job.mkdir()

    def read() -> tuple:
        return files.parse_read(
            subprocess.run(["sh", "-c", files.read_command(str(job))], capture_output=True, text=True, check=False).stdout
        )

    assert read() == (True, None)  # no job recorded there
    (job / files.JOB_FILE).write_text("{}")
    assert read() == (True, "")  # recorded, no view yet
    files.write_json(str(job / files.GROUP_FILE), {"status": "running", "gate_at": 5.0})
    assert json.loads(read()[1]) == {"status": "running", "gate_at": 5.0}
    line = "Ctrl-C on the controller (ansible-playbook of o'neil; $(true))"
    for _twice in range(2):
        out = subprocess.run(["sh", "-c", files.abort_command(str(job), line)], capture_output=True, text=True, check=False).stdout
        assert files.parse_abort_command(out) is None
    assert files.read_abort(str(job)) == line and (job / files.ABORT_FILE).read_text() == line + "\n" + line + "\n"
    out = subprocess.run(
        ["sh", "-c", files.abort_command(str(tmp_path / "nope"), line)], capture_output=True, text=True, check=False
    ).stdout
    assert files.parse_abort_command(out) == f"no job recorded in {tmp_path / 'nope'} on this host"


def _first_sight(directory: Path, seen: list) -> None:
    """A runner at the gate: looks for the abort file until it appears, and keeps what it read at that first sight."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        found = files.read_abort(str(directory))
        if found is not None:
            seen.append(found)
            return


def test_the_controllers_stop_appears_with_its_reason_in_it(tmp_path):
    """The controller's stop (a Ctrl-C: one shell line over its connection) against a runner watching for the file: the
    file is never seen without its first line, and the stop's own reason is that line, with whitespace folded."""
    reason = "Ctrl-C on the controller\t(ansible-playbook of root)"
    for attempt in range(20):
        job = tmp_path / f"J{attempt}"
        job.mkdir()
        seen: list = []
        runner = threading.Thread(target=_first_sight, args=(job, seen))
        runner.start()
        subprocess.run(["sh", "-c", files.abort_command(str(job), reason)], check=True, capture_output=True)
        runner.join()
        assert seen == ["Ctrl-C on the controller (ansible-playbook of root)"], (attempt, seen)
        assert sorted(p.name for p in job.iterdir()) == [files.ABORT_FILE]  # nothing left aside


PLUGINS = Path(__file__).resolve().parents[4] / "plugins"
JOB_FILES = re.compile(r"\.(ABORT|GATE|LATEST|STATE|JOB|GROUP|MEMBER|SECRET|SUPERVISOR)_FILE\b")
WRITES = re.compile(r"json\.dump\(|os\.rename\(|os\.replace\(|>>")


def test_only_the_protocols_owner_writes_the_jobs_files():
    """Whatever handles a job's files (names one of them) writes them through _job_files: no JSON dump, rename or shell
    append of its own - the atomic writes and the abort file's first-line guarantee live in one place."""
    writers = []
    for path in sorted(PLUGINS.rglob("*.py")):
        if path.name == "_job_files.py":
            continue
        text = path.read_text()
        if JOB_FILES.search(text) and WRITES.search(text):
            writers.append(f"{path.relative_to(PLUGINS)}: {WRITES.search(text).group(0)}")  # type: ignore[union-attr]
    assert writers == []
