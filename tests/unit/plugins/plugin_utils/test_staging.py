"""The launch's staging on the controller (plugin_utils/_launch/staging): the anchor's rules, the workers' markers, and how a stop
while the job stages is accounted for server by server."""

from __future__ import annotations

import json
import threading
import time

import pytest

from ansible_collections.ascend.cluster.plugins.plugin_utils._launch import staging, watch


@pytest.mark.parametrize(
    ("hosts", "forks", "expected"),
    [
        (["h1", "h2"], 5, True),
        (["h1", "h2", "h3", "h4", "h5", "h6", "h7", "h8"], 5, True),  # fewer forks than servers: the anchor waits all the same
        (["h1", "h2"], 2, True),  # one worker left for the other servers
        (["h1", "h2"], 1, False),  # it would hold the only worker: the others could never stage
        (["h1"], 5, False),  # nobody to wait for (a one-server job's stage task waits for the gate itself)
        (["h1", "h2"], None, False),
    ],
)
def test_the_anchor_waits_only_where_a_worker_is_left_for_the_others(hosts, forks, expected):
    assert staging.uses_anchor(hosts, forks) is expected


def test_the_anchor_waits_for_every_batch_of_the_others_stage_tasks():
    # 7 other servers, 4 workers for them (forks=5 less the anchor's): 2 batches, each up to the stage time-out
    assert staging.arrive_timeout([f"h{i}" for i in range(8)], 5, 120.0) == 2 * (120.0 + staging.ARRIVE_SLACK_S)
    assert staging.arrive_timeout(["h1", "h2"], 2, 10.0) == 10.0 + staging.ARRIVE_SLACK_S


def test_markers_say_who_began_arrived_released_and_whether_an_anchor_waits(tmp_path):
    markers = staging.Markers(str(tmp_path), "job/1 x")
    assert markers.directory == str(tmp_path / "ascend-staging-job_1_x")
    assert markers.begun() == [] and markers.arrivals(["h1"]) == {} and not markers.anchored()
    markers.hold("h1")
    markers.start("h1")
    markers.start("10.0.0.2")
    assert markers.anchored() and markers.begun() == ["10.0.0.2", "h1"] and markers.started("10.0.0.2") and not markers.started("h3")
    markers.arrive("h1", True)
    markers.arrive("10.0.0.2", False)
    assert markers.arrivals(["h1", "10.0.0.2", "h3"]) == {"h1": True, "10.0.0.2": False}
    markers.release("h3", {"failed": False, "ranks": [{"rank_id": 4, "host": "h3", "state": "aborted"}]})
    assert (markers.released("h3") or {})["ranks"][0]["rank_id"] == 4 and markers.released("h1") is None
    markers.let_go()
    markers.let_go()  # idempotent
    assert not markers.anchored()
    # a marker half-written by another worker is never read: each one appears whole (written aside, then renamed)
    assert not [p for p in (tmp_path / "ascend-staging-job_1_x").iterdir() if p.name.endswith(".tmp")]


def test_a_garbled_release_marker_counts_as_none(tmp_path):
    markers = staging.Markers(str(tmp_path), "j")
    markers.release("h2", {})
    (tmp_path / "ascend-staging-j" / "released-h2").write_text("{not json")
    assert markers.released("h2") is None


def test_the_anchor_stops_waiting_at_the_first_failed_stage(tmp_path):
    markers = staging.Markers(str(tmp_path), "j")
    markers.arrive("h2", False)
    began = time.monotonic()
    assert markers.wait_arrivals(["h2", "h3"], timeout=30) == {"h2": False}  # h3 is not waited for: the launch is refused
    assert time.monotonic() - began < 5


def test_the_anchor_waits_until_every_other_stage_task_arrived(tmp_path):
    markers = staging.Markers(str(tmp_path), "j")
    markers.arrive("h2", True)
    later = threading.Timer(0.3, markers.arrive, ("h3", True))
    later.start()
    try:
        assert markers.wait_arrivals(["h2", "h3"], timeout=30, interval=0.02) == {"h2": True, "h3": True}
    finally:
        later.cancel()
    assert markers.wait_arrivals(["h2", "h4"], timeout=0.1, interval=0.02) == {"h2": True}  # timed out: h4 never came


def view(status: str, members: dict, ranks: list | None = None) -> dict:
    found = {"status": status, "members": members}
    if ranks is not None:
        found["ranks"] = ranks
    return found


def test_a_stop_while_staging_is_accounted_for_server_by_server(tmp_path):
    markers = staging.Markers(str(tmp_path), "j")
    for host in ("h1", "h2", "h3"):
        markers.start(host)
    markers.release("h3", {"failed": False, "ranks": [{"rank_id": 4, "host": "h3", "state": "aborted"}]})
    members = {
        "h1": {"state": "done", "rank_states": {"0": "aborted", "1": "aborted"}},
        "h2": {"state": "joined"},  # told to stop, not done yet
        "h3": {"state": "waiting"},  # never joined: its own worker released it
        "h4": {"state": "waiting"},  # its stage task never began: nothing of the job there
    }
    hosts = ["h1", "h2", "h3", "h4"]
    ranks, pending = staging.account(view("stopping", members), markers, hosts, "h1", {})
    assert pending == ["h2"]
    assert [(r["rank_id"], r["host"], r["state"]) for r in ranks] == [(0, "h1", "aborted"), (1, "h1", "aborted"), (4, "h3", "aborted")]
    members["h2"] = {"state": "done", "rank_states": {"2": "aborted", "3": "staging"}}
    ranks, pending = staging.account(view("stopping", members), markers, hosts, "h1", {})
    assert pending == []
    line = watch.stop_line("Ctrl-C on the controller", "j", ranks, [3])
    assert line == "Ctrl-C on the controller: job j: 4 rank(s) on 3 server(s) stopped; ranks 3 could not be confirmed stopped"


def test_once_the_job_ended_its_final_list_says_how_every_rank_ended(tmp_path):
    markers = staging.Markers(str(tmp_path), "j")
    markers.start("h1")
    markers.start("h2")
    final = [{"rank_id": 0, "host": "h1", "state": "aborted"}, {"rank_id": 1, "host": "h2", "state": "stopped"}]
    ranks, pending = staging.account(
        view("ended", {"h1": {"state": "done"}, "h2": {"state": "done"}}, final), markers, ["h1", "h2"], "h1", {}
    )
    assert pending == [] and [r["rank_id"] for r in ranks] == [0, 1]
    assert watch.stop_line("SIGTERM to the controller", "j", ranks, []) == (
        "SIGTERM to the controller: job j: 2 rank(s) on 2 server(s) stopped, their devices are free"
    )


def test_without_a_group_yet_the_anchors_own_stop_says_what_it_released(tmp_path):
    markers = staging.Markers(str(tmp_path), "j")
    markers.start("h1")
    ranks, pending = staging.account(None, markers, ["h1", "h2"], "h1", {"stopped": [0, 1]})
    assert pending == [] and [(r["rank_id"], r["state"]) for r in ranks] == [(0, "aborted"), (1, "aborted")]
    assert (
        watch.stop_line("Ctrl-C on the controller", "j", [], [])
        == "Ctrl-C on the controller: job j: no rank was running, their devices are free"
    )


def test_a_release_marker_is_json_a_person_can_read(tmp_path):
    markers = staging.Markers(str(tmp_path), "j")
    markers.release("h2", {"failed": True, "ranks": [], "msg": "could not release"})
    assert json.loads((tmp_path / "ascend-staging-j" / "released-h2").read_text())["msg"] == "could not release"
