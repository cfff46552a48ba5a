"""What the controller's watch makes of the job's group view (plugins/plugin_utils/_launch/watch): case by case."""

from __future__ import annotations

import json
import time

import pytest

from ansible_collections.ascend.cluster.plugins.plugin_utils._launch import watch

LOG = "/run/j/device_{}/train.log"
T0 = 1_795_000_000.0


def rank(rank_id: int, state: str, host: str = "h1", server: str = "10.0.0.1", **more) -> dict:
    return dict(
        {"rank_id": rank_id, "device_id": rank_id % 8, "state": state, "host": host, "server": server, "log": LOG.format(rank_id)}, **more
    )


def view(ranks: list, cause: dict | None = None, members: dict | None = None, status: str = "ended") -> dict:
    return {"status": status, "ranks": ranks, "cause": cause, "members": members or {}, "counts": {}, "rank0_line": ""}


FAILED = {"host": "h2", "server": "10.0.0.2", "rank_id": 9, "device_id": 1, "rc": 1, "error": None, "log": LOG.format(9), "tail": ["boom"]}
STOP = "stopped by ascend.cluster.stop, run by root at 2026-11-23 12:03:04 UTC"


def test_parse_group_takes_a_view_and_refuses_anything_else():
    assert watch.parse_group(json.dumps({"status": "running"})) == {"status": "running"}
    for text in ("", "{", "[]", json.dumps({"no": "status"})):
        assert watch.parse_group(text) is None
    assert watch.ended({"status": "ended"}) and not watch.ended({"status": "stopping"}) and not watch.ended(None)


def test_progress_line_counts_the_ranks_by_state_and_shows_rank_0s_last_line():
    line = watch.progress_line(
        "J", {"status": "running", "counts": {"running": 14, "done": 2}, "rank0_line": "step 3 loss 333"}, "12:03:04"
    )
    assert line == "[J] 12:03:04 ranks: done 2, running 14 | rank 0: step 3 loss 333"
    assert watch.progress_line("J", {"status": "forming", "counts": {}}, "12:03:04").startswith(
        "[J] 12:03:04 forming: ranks: none reported yet"
    )


def test_a_job_whose_ranks_all_finished_succeeds():
    result = watch.verdict("J", view([rank(0, "done"), rank(1, "done")]))
    assert result["changed"] is False and "failed" not in result and result["msg"] == "2 ranks finished"
    assert [r["rank_id"] for r in result["ranks"]] == [0, 1] and result["group"] is True


def test_a_failed_rank_is_named_with_its_log_tail_and_every_rank_confirmed_stopped():
    ranks = [rank(0, "stopped", rc=-15), rank(9, "failed", host="h2", server="10.0.0.2", rc=1)]
    result = watch.verdict("J", view(ranks, FAILED))
    assert result["failed"] and result["first_failure"]["rank_id"] == 9 and result["unconfirmed"] == []
    assert result["msg"] == (
        f"rank 9 (server 10.0.0.2, device 1) failed first: exit code 1; every rank was stopped. Its log {LOG.format(9)} ends with:\n    boom"
    )


def test_a_rank_that_could_not_start_is_named_with_why_not_an_exit_code():
    """Its command never ran (its rank table changed after the launch wrote it): no exit code to show."""
    why = "the rank table /r/J/rank_table.json was changed after the launch wrote it: its sha256 is a, the launch wrote b"
    cause = dict(FAILED, rc=None, error=why, tail=[])
    result = watch.verdict("J", view([rank(0, "stopped", rc=-15), rank(9, "failed", host="h2", server="10.0.0.2", error=why)], cause))
    assert result["msg"].startswith(f"rank 9 (server 10.0.0.2, device 1) failed first: could not start: {why}; every rank was stopped."), (
        result
    )


def test_a_failure_never_claims_every_rank_stopped_when_a_server_could_not_confirm_it():
    ranks = [rank(0, "lost", host="h3", server="10.0.0.3"), rank(1, "lost", host="h3", server="10.0.0.3"), rank(9, "failed", host="h2")]
    result = watch.verdict("J", view(ranks, FAILED, members={"h3": {"state": "lost"}, "h2": {"state": "done"}}))
    assert result["unconfirmed"] == [0, 1] and result["lost_hosts"] == ["h3"]
    assert "every rank was stopped" not in result["msg"]
    assert "ranks 0-1 on 10.0.0.3 could not be confirmed stopped (their server stopped answering)" in result["msg"]


def test_a_lost_server_is_named_with_when_it_went_silent_and_its_ranks():
    cause = {"host": "h2", "server": "h2", "rank_id": -1, "lost": [8, 9], "since": T0, "error": "stopped answering"}
    ranks = [rank(0, "stopped"), rank(8, "lost", host="h2", server="h2"), rank(9, "lost", host="h2", server="h2")]
    result = watch.verdict("J", view(ranks, cause, members={"h2": {"state": "lost"}}))
    when = time.strftime("%H:%M:%S", time.localtime(T0))
    assert result["msg"] == f"h2 stopped answering at {when}; ranks 8-9 lost; every other rank was stopped"
    assert result["lost_hosts"] == ["h2"] and result["unconfirmed"] == []


def test_ranks_whose_runners_died_are_named_lost_with_how():
    cause = {"host": "h1", "server": "10.0.0.1", "rank_id": -1, "lost": [3], "since": None, "error": "its runner died"}
    result = watch.verdict("J", view([rank(3, "failed"), rank(4, "stopped")], cause))
    assert result["msg"] == "10.0.0.1: rank 3 lost - its runner died; every other rank was stopped"


def test_a_stop_from_outside_names_who_stopped_it_and_how_many_ranks():
    cause = {"host": "h1", "server": "10.0.0.1", "rank_id": -1, "stopped_by": STOP}
    result = watch.verdict("J", view([rank(0, "stopped"), rank(1, "stopped"), rank(2, "done")], cause))
    assert result["first_failure"]["ranks"] == [0, 1]
    assert result["msg"] == f"the job was stopped before its ranks finished: {STOP} (2 ranks stopped; every rank was stopped)"


def test_servers_that_never_joined_are_named():
    cause = {
        "host": None,
        "server": None,
        "rank_id": -1,
        "error": "servers h3 did not join the job's group at 10.0.0.1:29700",
        "missing": ["h3"],
    }
    result = watch.verdict("J", view([rank(0, "stopped"), rank(8, "lost", host="h3")], cause, members={"h3": {"state": "missing"}}))
    assert result["msg"] == cause["error"] and result["lost_hosts"] == ["h3"]


def test_no_cause_but_a_failed_rank_names_the_rank_that_ended_first():
    ranks = [rank(0, "failed", rc=2, ended=T0 + 2), rank(1, "failed", rc=3, ended=T0 + 1), rank(2, "done")]
    result = watch.verdict("J", view(ranks))
    assert result["first_failure"]["rank_id"] == 1 and result["failed"]


def test_no_cause_the_first_failed_rank_is_by_the_controllers_clock():
    # rank 0's server runs 5 s ahead: by its own clock it ended last, by the controller's first
    ranks = [rank(0, "failed", rc=2, ended=T0 + 4, clock_offset=5.0), rank(8, "failed", rc=3, ended=T0 + 1, host="h2"), rank(1, "done")]
    assert watch.verdict("J", view(ranks))["first_failure"]["rank_id"] == 0


def test_no_cause_and_nothing_finished_says_nobody_recorded_why():
    result = watch.verdict("J", view([rank(0, "stopped")]))
    assert result["failed"] and "nobody recorded why" in result["msg"]


def test_the_coordinators_server_lost_to_the_controller_claims_nothing_about_the_ranks():
    result = watch.unreachable("J", "h1", T0, None)
    assert result["coordinator_lost"] and result["lost_hosts"] == ["h1"] and result["ranks"] == []
    assert "could not confirm it: check with ascend.cluster.status" in result["msg"]
    assert "every rank was stopped" not in result["msg"]


@pytest.mark.parametrize(
    ("before", "answered", "after"),
    [
        (watch.Misses(), True, watch.Misses()),
        (watch.Misses(), False, watch.Misses(1, T0)),
        (watch.Misses(1, T0 - 1), False, watch.Misses(2, T0 - 1)),
        (watch.Misses(1, T0 - 1), True, watch.Misses()),
    ],
)
def test_count_miss(before, answered, after):
    assert watch.count_miss(before, answered, T0) == after


@pytest.mark.parametrize(("ids", "text"), [([0, 1, 2, 5, 8, 9], "0-2, 5, 8-9"), ([3], "3"), ([], ""), ([2, 2, 1], "1-2")])
def test_rank_ranges(ids, text):
    assert watch.rank_ranges(ids) == text


def test_without_fail_fast_the_first_failed_rank_is_named_and_the_others_ran_to_their_end():
    """A job whose group shows fail_fast false: no cause (nobody stopped the job); the first failed rank by the controller's
    clock is the failure, and the message says how every other rank ended instead of claiming a stop."""
    ranks = [
        rank(0, "done", rc=0, ended=T0 + 9),
        rank(3, "failed", rc=2, ended=T0 + 5, stopped_by=None, tail=["late"]),
        rank(9, "failed", host="h2", server="10.0.0.2", rc=1, ended=T0 + 1, stopped_by=None, tail=["boom"]),
        rank(10, "done", host="h2", server="10.0.0.2", rc=0, ended=T0 + 9),
    ]
    result = watch.verdict("J", dict(view(ranks), fail_fast=False))
    assert result["failed"] and result["fail_fast"] is False and result["first_failure"]["rank_id"] == 9
    assert "stopped_by" not in result["first_failure"]  # the rank's own record, not a stop of the job
    assert result["msg"] == (
        "rank 9 (server 10.0.0.2, device 1) failed first: exit code 1; fail-fast off, the other ranks ran to their end: "
        f"2 done, 1 failed (rank 3). Its log {LOG.format(9)} ends with:\n    boom"
    )
    assert watch.verdict("J", view(ranks))["fail_fast"] is True  # a group that does not say: the default
