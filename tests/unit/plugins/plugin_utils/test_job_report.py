"""The per-rank rows of the launch report and status.yml (filter rank_rows), table-driven."""

from __future__ import annotations

import json

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.ascend.cluster.plugins.filter.job_summary import job_summary
from ansible_collections.ascend.cluster.plugins.filter.rank_rows import rank_rows
from ansible_collections.ascend.cluster.plugins.plugin_utils import _job_report as report
from ansible_collections.ascend.cluster.plugins.plugin_utils._job_report import seconds


def rank(rank_id, device_id, **extra):
    return dict({"rank_id": rank_id, "device_id": device_id, "state": "done", "rc": 0}, **extra)


HOSTVARS = {
    "server0": {"_ascend_watch": {"server": "10.0.0.1", "job_id": "j1", "ranks": [rank(1, 1), rank(0, 0)]}},
    "server1": {"_ascend_watch": {"job_id": "j1", "ranks": [rank(2, 0, tail=["step 1", "x" * 70 + "the end"])]}},
    "server2": {},  # did not take part: no registered result
    "server3": {"_ascend_watch": {"skipped": True, "changed": False}},  # the task was skipped there
}


def test_every_servers_ranks_in_rank_order_named_by_the_watchs_address_else_the_host():
    rows = rank_rows(["server0", "server1", "server2", "server3"], HOSTVARS, "_ascend_watch")
    assert [(r["rank_id"], r["server"], r["job_id"]) for r in rows] == [(0, "10.0.0.1", "j1"), (1, "10.0.0.1", "j1"), (2, "server1", "j1")]
    assert rows[0]["last_line"] == ""
    assert rows[2]["last_line"] == ("x" * 70 + "the end")[-60:]
    assert rows[2]["tail"] == ["step 1", "x" * 70 + "the end"]  # the rank's own entry is kept


def test_no_host_with_a_result_gives_no_rows():
    assert rank_rows(["server2", "server3"], HOSTVARS, "_ascend_watch") == []
    assert rank_rows(["server0"], HOSTVARS, "_ascend_status") == []


@pytest.mark.parametrize(
    "hosts, message",
    [("server0", "the input must be the play's host names"), (["nowhere"], "host 'nowhere' is not in hostvars")],
)
def test_bad_input_is_named(hosts, message):
    with pytest.raises(AnsibleFilterError, match=f"rank_rows: {message}"):
        rank_rows(hosts, HOSTVARS, "_ascend_watch")


# job_summary: the line, the short table and the JSON document of a watched job


def watched(server, ranks, **extra):
    return {"_ascend_watch": dict({"server": server, "ranks": ranks}, **extra)}


def finished(rank_id, device_id, state="done", rc=0, started=100.0, took=3.121):
    return rank(
        rank_id,
        device_id,
        state=state,
        rc=rc,
        started=started,
        ended=started + took,
        duration=took,
        log=f"/runs/j//device_{rank_id}/train.log",
    )


def test_times_across_servers_are_read_in_the_controllers_clock():
    """server1's clock runs 20 s ahead (its recorded clock_offset): its ranks started 24 ms after server0's, not 20 s."""
    hostvars = {
        "server0": watched("10.0.0.1", [finished(0, 0, started=1000.0, took=3.0)]),
        "server1": watched("10.0.0.2", [dict(finished(1, 0, started=1020.024, took=3.1), clock_offset=20.0)]),
    }
    summary = job_summary(["server0", "server1"], hostvars, "_ascend_watch", job_id="j1")
    assert summary["duration_s"] == 3.1 and summary["line"] == "train j1: 2/2 ranks done in 3.1 s"  # not 23.1 s
    assert [(r["started"], r["ended"]) for r in summary["ranks"]] == [(1000.0, 1003.0), (1000.024, 1003.124)]
    assert [r["duration_s"] for r in summary["ranks"]] == [3.0, 3.1]  # each rank's own, from one clock: as it was
    rows = rank_rows(["server0", "server1"], hostvars, "_ascend_watch")
    assert [r["start_time"] for r in rows] == [report.clock_text(1000.0), report.clock_text(1000.024)]
    assert rows[1]["end_time"] == report.clock_text(1003.124) and rows[1]["started"] == 1020.024  # the rank's own record kept


@pytest.mark.parametrize("when, text", [(None, None), (1000.0004, "00:16:40.000"), (1000.9996, "00:16:41.000"), (1000.125, "00:16:40.125")])
def test_a_time_of_day_is_shown_to_the_millisecond(when, text, monkeypatch):
    monkeypatch.setattr(report.time, "localtime", report.time.gmtime)
    assert report.clock_text(when) == text


def test_a_healthy_job_is_one_line_with_a_rounded_duration_and_a_short_table():
    hostvars = {
        "server0": watched("10.0.0.1", [finished(r, r) for r in range(8)]),
        "server1": watched("10.0.0.2", [finished(r + 8, r) for r in range(8)]),
    }
    summary = job_summary(["server0", "server1"], hostvars, "_ascend_watch", job_id="j1")
    assert summary["line"] == "train j1: 16/16 ranks done in 3.1 s"
    assert summary["ok"] is True and summary["failure"] is None and summary["message"] == ""
    assert summary["counts"] == {"done": 16}
    assert summary["ranks"][0] == {
        "rank_id": 0, "server": "10.0.0.1", "device_id": 0, "state": "done", "rc": 0,
        "outcome": "exit 0", "duration_s": 3.1, "started": 100.0, "ended": 103.121, "log": "/runs/j/device_0/train.log",
    }  # fmt: skip
    # header, 4 ranks, one line for the 12 left out
    assert len(summary["table"]) == 6
    assert summary["table"][-1] == "... 12 more row(s) with STATE done/running; -e ascend_report_all_rows=true lists them"
    assert len(job_summary(["server0", "server1"], hostvars, "_ascend_watch", job_id="j1", all_rows=True)["table"]) == 17
    json.dumps(summary)  # a JSON document as it is


def test_a_failed_rank_is_named_first_and_the_others_stopped_by_fail_fast():
    failure = {"server": "10.0.0.2", "rank_id": 11, "device_id": 3, "rc": 1, "log": "/l", "tail": ["boom"], "error": None}
    ranks1 = [finished(r + 8, r, state="stopped", rc=-15) for r in range(8)]
    ranks1[3] = finished(11, 3, state="failed", rc=1)
    hostvars = {
        "server0": watched(
            "10.0.0.1", [finished(r, r, state="stopped", rc=-15) for r in range(8)], first_failure=failure, msg="rank 11 ... boom"
        ),
        "server1": watched("10.0.0.2", ranks1, first_failure=failure, msg="rank 11 ... boom"),
    }
    summary = job_summary(["server0", "server1"], hostvars, "_ascend_watch", job_id="j1")
    assert summary["ok"] is False
    assert summary["line"] == "FAILED: train j1: rank 11 (server 10.0.0.2, device 3) exit 1; 15 stopped"
    assert summary["message"] == "rank 11 ... boom"
    assert summary["failure"] == {"rank_id": 11, "server": "10.0.0.2", "device_id": 3, "rc": 1, "error": None, "outcome": "exit 1"}
    assert summary["table"][1].split()[:5] == ["10.0.0.2", "3", "11", "failed", "exit"]  # the failed rank first
    stopped = [r for r in summary["ranks"] if r["state"] == "stopped"]
    assert len(stopped) == 15 and {r["outcome"] for r in stopped} == {"stopped by fail-fast (SIGTERM)"}
    assert summary["counts"] == {"failed": 1, "stopped": 15}
    assert len(summary["table"]) == 17  # no row ended well: every one listed


def test_without_fail_fast_no_rank_is_stopped_by_fail_fast_and_the_line_says_how_the_others_ended():
    failure = {"server": "10.0.0.2", "rank_id": 11, "device_id": 3, "rc": 1, "log": "/l", "tail": ["boom"], "error": None}
    ranks = [finished(r, r) for r in range(8)] + [finished(8, 0, state="stopped", rc=-15), finished(11, 3, state="failed", rc=1)]
    hostvars = {"server0": watched("10.0.0.1", ranks, group=True, first_failure=failure, msg="rank 11 ...", fail_fast=False)}
    summary = job_summary(["server0"], hostvars, "_ascend_watch", job_id="j1")
    assert summary["ok"] is False and summary["fail_fast"] is False
    assert summary["line"] == (
        "FAILED: train j1: rank 11 (server 10.0.0.2, device 3) exit 1; fail-fast off, the other ranks ran to their end: 8 done, 1 stopped"
    )
    # a rank ended by something else (a signal to its runner) is stopped, never "by fail-fast"
    assert [r["outcome"] for r in summary["ranks"] if r["state"] == "stopped"] == ["stopped (SIGTERM)"]
    hostvars["server0"]["_ascend_watch"]["fail_fast"] = True
    assert job_summary(["server0"], hostvars, "_ascend_watch", job_id="j1")["line"].endswith("exit 1; 1 stopped")


def test_the_completed_failure_wins_over_a_followers_early_copy():
    """A cut link fails ranks 3 (server0) and 11 (server1) at once: server1's watcher claims rank 3 early from
    the abort line and stops waiting before server0's watcher completes the claim with rank 3's log tail."""
    early = {"server": "10.0.0.1", "rank_id": 3, "device_id": 3, "rc": 1, "error": "EI0006", "log": "/l3", "tail": [], "early": True}
    completed = dict(early, tail=["EI0006: socket timeout"], early=False)
    ranks0 = [finished(r, r, state="stopped", rc=-15) for r in range(8)]
    ranks0[3] = finished(3, 3, state="failed", rc=1)
    ranks1 = [finished(r + 8, r, state="stopped", rc=-15) for r in range(8)]
    for follower_first in (True, False):
        watchers = {
            "server0": watched("10.0.0.1", ranks0, first_failure=completed, msg="rank 3 ... EI0006: socket timeout"),
            "server1": watched("10.0.0.2", ranks1, first_failure=early, msg="rank 3 ... ends with:"),
        }
        hosts = ["server1", "server0"] if follower_first else ["server0", "server1"]
        summary = job_summary(hosts, watchers, "_ascend_watch", job_id="j1")
        assert summary["message"] == "rank 3 ... EI0006: socket timeout"
        assert summary["line"] == "FAILED: train j1: rank 3 (server 10.0.0.1, device 3) exit 1; 15 stopped"
    # only the early copy came back (the failed rank's server was lost): it is reported as it is
    alone = {"server1": watched("10.0.0.2", ranks1, first_failure=early, msg="rank 3 ... ends with:")}
    assert job_summary(["server1"], alone, "_ascend_watch", job_id="j1")["message"] == "rank 3 ... ends with:"


@pytest.mark.parametrize(
    "first, line",
    [
        (
            {"server": "s", "rank_id": 3, "device_id": 3, "rc": -9, "error": "killed by SIGKILL (signal 9)"},
            "rank 3 (server s, device 3) killed by SIGKILL; 1 stopped",
        ),
        (
            {"server": "s", "rank_id": -1, "stopped_by": "ascend.cluster.stop", "ranks": [0, 1]},
            "STOPPED: train j: ascend.cluster.stop; 1 of 2 ranks stopped",
        ),
        ({"server": "s", "rank_id": -1, "error": "cannot poll the server: gone"}, "FAILED: train j: cannot poll the server: gone"),
        (
            {"server": "s", "rank_id": -1, "lost": [8, 9, 10], "since": None, "error": "its runners died"},
            "FAILED: train j: s: ranks 8-10 lost - its runners died; every other rank was stopped",
        ),
        (
            {"server": "s", "rank_id": 3, "device_id": 3, "rc": -15, "error": 'stalled: no progress for 20 s; last line: "step 3"'},
            'FAILED: train j: rank 3 (server s, device 3) stalled: no progress for 20 s; last line: "step 3"; 1 stopped',
        ),
        (  # known only from its abort line so far: the words once
            {
                "server": "s",
                "rank_id": 3,
                "device_id": 3,
                "rc": -15,
                "error": "stopped after running longer than the launch timeout",
                "early": True,
            },
            "FAILED: train j: rank 3 (server s, device 3) stopped after running longer than the launch timeout; 1 stopped",
        ),
        (  # never started (no exit code): its rank table changed after the launch wrote it, early or complete alike
            {"server": "s", "rank_id": 3, "device_id": 3, "rc": None, "error": "the rank table /r/t.json was changed", "early": True},
            "FAILED: train j: rank 3 (server s, device 3) could not start: the rank table /r/t.json was changed; 1 stopped",
        ),
    ],
    ids=["signal", "stopped from outside", "server error", "server lost", "stalled", "timed out, early", "could not start"],
)
def test_every_kind_of_failure_has_its_line(first, line):
    ranks = [finished(3, 3, state="failed", rc=-9), finished(4, 4, state="stopped", rc=-15)]
    summary = job_summary(["h"], {"h": watched("s", ranks, first_failure=first, msg="m")}, "_ascend_watch", job_id="j")
    assert summary["line"].endswith(line)
    outcome = {r["rank_id"]: r["outcome"] for r in summary["ranks"]}
    assert outcome[3] == "killed by SIGKILL"
    assert outcome[4] == ("stopped by fail-fast (SIGTERM)" if first["rank_id"] >= 0 else "stopped (SIGTERM)")


def test_a_running_job_counts_its_states():
    ranks = [rank(0, 0, state="running", rc=None), rank(1, 1, state="done")]
    summary = job_summary(["h"], {"h": {"_ascend_status": {"ranks": ranks}}}, "_ascend_status", job_id="j", kind="status")
    assert summary["line"] == "status j: 1 done, 1 running"
    assert summary["duration_s"] is None and summary["ok"] is False


def test_a_job_staged_at_a_gate_that_never_opened_says_how_to_release_it():
    ranks = [rank(0, 0, state="staged", rc=None), rank(1, 1, state="staged", rc=None)]
    summary = job_summary(["h"], {"h": {"_ascend_status": {"ranks": ranks}}}, "_ascend_status", job_id="j", kind="status")
    assert summary["line"] == (
        "status j: 2 staged (waiting at a gate that has not opened: unless their launch is still under way, "
        "ascend.cluster.stop releases them)"
    )


@pytest.mark.parametrize("value, rounded", [(3.121, 3.1), (0.0412, 0.04), (95.7, 96.0), (None, None), ("x", None), (True, None)])
def test_seconds_are_rounded_for_people(value, rounded):
    assert seconds(value) == rounded


def test_job_summary_names_bad_input():
    with pytest.raises(AnsibleFilterError, match="job_summary: the input must be the play's host names"):
        job_summary("server0", HOSTVARS, "_ascend_watch")


# stop.yml's one line (stop_summary): what each server's training_job state=stop returned.
def _stopped(job_id, stopped, killed=()):
    return {"changed": bool(stopped), "job_id": job_id, "stopped": list(stopped), "killed": list(killed), "ranks": []}


@pytest.mark.parametrize(
    ("results", "check_mode", "line"),
    [
        (
            {"h1": _stopped("J", range(8)), "h2": _stopped("J", range(8, 16))},
            False,
            "stop: job J: stopped 16 rank(s) on 2 server(s)",
        ),
        (
            {"h1": _stopped("J", [0, 1], killed=[1]), "h2": _stopped("J", [])},
            False,
            "stop: job J: stopped 2 rank(s) on 1 server(s); SIGKILL needed for h1 rank 1",
        ),
        ({"h1": _stopped("J", []), "h2": _stopped("J", [])}, False, "stop: job J: nothing was running"),
        ({"h1": _stopped("J", [0])}, True, "stop: job J: would stop 1 rank(s) on 1 server(s)"),
        # job_id=all: one entry per job that still ran
        (
            {"h1": {"changed": True, "jobs": [_stopped("A", [0]), _stopped("B", [1, 2])]}, "h2": {"changed": False, "jobs": []}},
            False,
            "stop: job A: stopped 1 rank(s) on 1 server(s); job B: stopped 2 rank(s) on 1 server(s)",
        ),
        # no job recorded (job_id None), a server without the role's task (skipped)
        (
            {"h1": {"changed": False, "job_id": None, "stopped": [], "killed": []}, "h2": {"skipped": True}},
            False,
            "stop: no job recorded on the selected servers: nothing to stop",
        ),
        (
            {"h1": _stopped("J", [0]), "h2": {"failed": True, "msg": "boom"}},
            False,
            "stop: job J: stopped 1 rank(s) on 1 server(s); could not stop on h2 (see the error above; run stop.yml again)",
        ),
    ],
)
def test_the_stop_line_counts_ranks_and_servers_per_job(results, check_mode, line):
    assert report.stop_summary(results, check_mode=check_mode) == line


def test_status_and_the_diagnosis_name_the_coordinators_end_from_the_servers_group_health():
    """Issue 34: status.yml said only "16 stopped" after the coordinator was killed. Each server's status result carries
    group_health (_job_group.health): the coordinator's server's own words win; else the servers that lost it."""
    lost = "lost the job's coordinator at 10.0.0.1:29700: no word from it for 3 s (at 12:03:07)"
    silent = "the job's coordinator at 10.0.0.1:29700 has not rewritten its group.json since 12:03:04 (9 s ago; its process 7 is gone)"

    def hostvars(h0: dict, h1: dict) -> dict:
        ranks = {"server0": [rank(0, 0, state="stopped")], "server1": [rank(1, 0, state="stopped")]}
        return {h: {"_s": {"job_id": "j1", "ranks": ranks[h], "group_health": g}} for h, g in (("server0", h0), ("server1", h1))}

    both = hostvars(
        {"coordinator": "running", "member": "lost", "problem": silent}, {"coordinator": None, "member": "lost", "problem": lost}
    )
    summary = job_summary(["server0", "server1"], both, "_s", kind="status")
    assert summary["group_problem"] == silent and summary["line"] == f"status j1: 2 stopped; {silent}", summary["line"]
    members = hostvars({"coordinator": None, "member": "lost", "problem": lost}, {"coordinator": None, "member": "lost", "problem": lost})
    assert report.group_problem(["server0", "server1"], members, "_s") == f"server0 {lost} (so did server1)"
    healthy = hostvars(
        {"coordinator": "running", "member": "joined", "problem": None}, {"coordinator": None, "member": "joined", "problem": None}
    )
    assert job_summary(["server0", "server1"], healthy, "_s", kind="status")["line"] == "status j1: 2 stopped"
    diagnosis = report.with_group_problem(
        {"line": "no failed rank and no Ascend error code found: nothing to diagnose"}, ["server0", "server1"], both, "_s"
    )
    assert diagnosis["line"] == f"{silent}; no failed rank and no Ascend error code found: nothing to diagnose"
    assert diagnosis["group_problem"] == silent
