"""The restart policy (plugin_utils/_restart): what restarts, what ends the job and why, and how attempts are reported."""

from __future__ import annotations

from ansible_collections.ascend.cluster.plugins.filter.restart_plan import restart_plan
from ansible_collections.ascend.cluster.plugins.plugin_utils import _restart as restart


def failed(rank=3, outcome="exit 1", last="step 4 loss 250", job="j", started=(100.0, 100.1), ended=(105.0, 104.0)) -> dict:
    ranks = [
        {"rank_id": 3, "state": "failed", "started": started[0], "ended": ended[0]},
        {"rank_id": 0, "state": "stopped", "started": started[1], "ended": ended[1]},
    ]
    return {
        "job_id": job,
        "ok": False,
        "line": f"FAILED: train {job}: rank {rank} ...",
        "failure": {"rank_id": rank, "server": "10.0.0.1", "outcome": outcome},
        "message": f"rank {rank} failed first: {outcome}. Its log ends with:\n    step 1\n    {last}\n",
        "ranks": ranks,
    }


def test_a_rank_failure_restarts_on_the_same_servers_while_restarts_are_left():
    decision = restart.decide(failed(), {}, {}, [], max_restarts=2)
    assert decision["restart"] and decision["why"] == "restart 1 of 2: on the same servers"
    assert decision["signature"] == {"rank_id": 3, "cause": "exit 1", "last_line": "step 4 loss 250"}


def test_nothing_restarts_after_success_a_stop_by_a_person_or_the_last_restart():
    ok = dict(failed(), failure=None, ok=True)
    assert restart.decide(ok, {}, {}, [], 3) == {
        "restart": False,
        "at_fault": [],
        "signature": restart.signature(None, ok["message"]),
        "why": "the job succeeded",
    }
    stopped = dict(failed(), failure={"rank_id": -1, "stopped_by": "stopped by ascend.cluster.stop, run by alice"})
    assert (
        restart.decide(stopped, {}, {}, [], 3)["why"] == "stopped by a person (stopped by ascend.cluster.stop, run by alice): not restarted"
    )
    ctrl_c = restart.decide(failed(), {"interrupted": {"signal": 2}}, {}, [], 3)
    assert not ctrl_c["restart"] and "the controller was interrupted" in ctrl_c["why"]
    assert restart.decide(failed(), {}, {}, [], 0)["why"] == "no restart was allowed (max_restarts is 0)"
    assert restart.decide(failed(last="step 9"), {}, {}, [{"signature": {}}], 1)["why"] == "all 1 restart(s) were used"


def test_a_fault_on_a_server_ends_the_job_naming_it():
    lost = restart.decide(failed(), {"lost_hosts": ["h2"]}, {}, [], 3)
    assert not lost["restart"] and lost["at_fault"] == [{"server": "h2", "why": "lost (stopped answering)"}]
    assert "the fault is on a server (h2: lost (stopped answering))" in lost["why"]
    diagnosis = {
        "seen": [
            {"kind": "clock", "server": "h1", "text": "h1 clock 3 s off"},  # not a fault of the server's hardware
            {"kind": "link", "server": "h3", "text": "h3 eth3 link DOWN - check the optics/cable"},
            {"kind": "leftover", "server": "h3", "text": "h3: pid 9 holds device 1"},  # the same server once
        ]
    }
    found = restart.decide(failed(), {}, diagnosis, [], 3)
    assert found["at_fault"] == [{"server": "h3", "why": "h3 eth3 link DOWN - check the optics/cable"}] and not found["restart"]


def test_the_same_failure_at_the_same_point_twice_is_a_crash_loop_but_one_that_got_further_is_not():
    before = [{"signature": restart.signature(failed()["failure"], failed()["message"])}]
    loop = restart.decide(failed(), {}, {}, before, 3)
    assert not loop["restart"] and loop["why"].startswith("not restarted: a crash loop - rank 3 failed again with the same cause (exit 1)")
    assert "its last line: step 4 loss 250" in loop["why"]
    assert restart.decide(failed(last="step 9 loss 111"), {}, {}, before, 3)["restart"]  # it got further: progress
    assert restart.decide(failed(rank=5), {}, {}, before, 3)["restart"]  # another rank
    assert restart.decide(failed(outcome="killed by SIGKILL"), {}, {}, before, 3)["restart"]  # another cause


def test_an_attempts_record_and_the_time_to_restart_in_the_summary():
    first = failed(job="j")
    entry = restart.record(0, "j", first, restart.decide(first, {}, {}, [], 2))
    assert entry["failed_at"] == 105.0 and entry["cause"] == "exit 1" and entry["restart_s"] is None
    second = {
        "job_id": "j-r1",
        "ok": True,
        "line": "train j-r1: 2/2 ranks done in 3 s",
        "failure": None,
        "message": "",
        "ranks": [{"rank_id": 0, "started": 110.0, "ended": 113.0}, {"rank_id": 3, "started": 110.5, "ended": 113.0}],
    }
    out = restart.summarised(second, [entry])
    assert out["attempts"][0]["restart_s"] == 5.5  # failure at 105.0 -> every rank started at 110.5
    assert out["line"] == "train j-r1: 2/2 ranks done in 3 s after 1 restart (j: rank 3 exit 1; 5.5 s to restart)"
    assert restart.summarised(second, []) == second  # a job that never restarted is summarised as before
    never = dict(second, ranks=[{"rank_id": 0, "started": None}])
    assert restart.summarised(never, [entry])["attempts"][0]["restart_s"] is None  # a rank that never started: no figure


def test_the_filter_ignores_an_earlier_attempts_diagnosis_and_returns_the_records_so_far():
    old = {"job_id": "j", "seen": [{"kind": "link", "server": "h3", "text": "h3 eth3 link DOWN"}]}
    plan = restart_plan(failed(job="j-r1"), diagnosis=old, attempts=[{"attempt": 0, "signature": {}}], max_restarts=3)
    assert plan["restart"] and plan["at_fault"] == []
    assert [a["attempt"] for a in plan["attempts"]] == [0, 1] and plan["record"]["job_id"] == "j-r1"
