"""The training watch's decisions (plugin_utils/_watch.step): what was seen in, what to do out."""

from __future__ import annotations

import time

import pytest

from ansible_collections.ascend.cluster.plugins.plugin_utils import _watch as watch

LOG = "/run/j/device_{}/train.log"


def ranks(*states: str, first: int = 0) -> list:
    return [{"rank_id": first + i, "device_id": i, "state": s, "log": LOG.format(first + i)} for i, s in enumerate(states)]


def poll(*states: str, failed_rank: dict | None = None, abort: str | None = None, phases: tuple = ()) -> dict:
    polled = ranks(*states)
    for rank, phase in zip(polled, phases):
        rank["phase"] = phase
    return {"ranks": polled, "failed_rank": failed_rank, "abort": abort}


FAILED_RANK = {"rank_id": 1, "device_id": 1, "rc": -9, "error": "killed by SIGKILL", "log": LOG.format(1), "tail": ["x"]}
MARKER = {"server": "h2", "rank_id": 9, "device_id": 1, "rc": 1, "log": "-", "tail": []}
STOP = "stopped by ascend.cluster.stop, run by root at 2026-11-23 12:03:04 UTC"
VANISHED = "the rank's processes vanished without recording an exit code (killed -9?)"
LOST_RANK: dict = {"rank_id": 0, "device_id": 0, "rc": None, "phase": "running", "error": VANISHED, "log": LOG.format(0), "tail": []}
T0 = 1_795_000_000.0

CASES = [
    # (id, seen, expected decision)
    ("poll: every rank done", dict(polled=poll("done", "done")), watch.Decision(watch.SUCCEED)),
    ("poll: running", dict(polled=poll("running", "done")), watch.Decision(watch.WAIT)),
    ("poll: not started yet, look again soon", dict(polled=poll("staged", "pending")), watch.Decision(watch.WAIT, soon=True)),
    (
        "poll: a local rank failed",
        dict(polled=poll("stopped", "failed", failed_rank=FAILED_RANK)),
        watch.Decision(watch.FAIL, dict(FAILED_RANK, server="h1")),
    ),
    (
        "poll: the server cannot be polled",
        dict(polled={"failed": True, "msg": "boom"}),
        watch.Decision(watch.FAIL, {"server": "h1", "rank_id": -1, "error": "cannot poll the server: boom"}),
    ),
    (
        "poll: stopped from outside names the abort reason",
        dict(polled=poll("stopped", "stopped", abort=STOP)),
        watch.Decision(watch.FAIL, {"server": "h1", "rank_id": -1, "stopped_by": STOP, "ranks": [0, 1]}),
    ),
    (
        "poll: some finished, the rest stopped",
        dict(polled=poll("done", "stopped", abort=STOP)),
        watch.Decision(watch.FAIL, {"server": "h1", "rank_id": -1, "stopped_by": STOP, "ranks": [1]}),
    ),
    (
        "poll: stopped with no abort file",
        dict(polled=poll("stopped", "stopped")),
        watch.Decision(watch.FAIL, {"server": "h1", "rank_id": -1, "stopped_by": "nobody recorded why (no abort file)", "ranks": [0, 1]}),
    ),
    ("marker of another server: follow it", dict(marker=MARKER), watch.Decision(watch.FOLLOW, MARKER)),
    ("marker, and local ranks still running", dict(polled=poll("running"), marker=MARKER), watch.Decision(watch.FOLLOW, MARKER)),
    ("marker, but the local ranks were stopped", dict(polled=poll("stopped"), marker=MARKER), watch.Decision(watch.FOLLOW, MARKER)),
    ("marker, but every local rank finished first", dict(polled=poll("done"), marker=MARKER), watch.Decision(watch.SUCCEED)),
    (
        "marker, and a local rank failed: its own failure is claimed",
        dict(polled=poll("failed", failed_rank=FAILED_RANK), marker=MARKER),
        watch.Decision(watch.FAIL, dict(FAILED_RANK, server="h1")),
    ),
    ("probe: nothing", dict(probe={"abort": None, "final": 0}), watch.Decision(watch.WAIT)),
    ("probe: some ranks ended", dict(probe={"abort": None, "final": 1}), watch.Decision(watch.WAIT)),
    ("probe: every rank ended", dict(probe={"abort": None, "final": 2}), watch.Decision(watch.POLL_NOW)),
    ("probe: did not run through", dict(probe=None), watch.Decision(watch.WAIT)),
    ("probe: abort file being written", dict(probe={"abort": "", "final": 0}), watch.Decision(watch.WAIT)),
    (
        "probe: a runner's failure line",
        dict(probe={"abort": "rank 1 failed (rc=3)", "final": 1}),
        watch.Decision(
            watch.CLAIM_EARLY,
            {"server": "h1", "rank_id": 1, "device_id": 1, "rc": 3, "error": None, "log": LOG.format(1), "tail": [], "early": True},
        ),
    ),
    (
        "probe: a rank killed by a signal",
        dict(probe={"abort": "rank 0 failed (rc=-9): killed by SIGKILL (signal 9) - not sent by ascend.cluster", "final": 2}),
        watch.Decision(
            watch.CLAIM_EARLY,
            {
                "server": "h1",
                "rank_id": 0,
                "device_id": 0,
                "rc": -9,
                "error": "killed by SIGKILL (signal 9) - not sent by ascend.cluster",
                "log": LOG.format(0),
                "tail": [],
                "early": True,
            },
        ),
    ),
    (
        "probe: a failure line of a rank not on this server",
        dict(probe={"abort": "rank 7 failed (rc=1)", "final": 0}),
        watch.Decision(
            watch.CLAIM_EARLY,
            {"server": "h1", "rank_id": 7, "device_id": -1, "rc": 1, "error": None, "log": "-", "tail": [], "early": True},
        ),
    ),
    ("probe: stopped from outside, ranks still ending", dict(probe={"abort": STOP, "final": 1}), watch.Decision(watch.WAIT)),
    ("probe: stopped from outside, every rank ended", dict(probe={"abort": STOP, "final": 2}), watch.Decision(watch.POLL_NOW)),
    # a host that dies mid-job, a runner killed with SIGKILL
    (
        "probe: a runner is gone, the full poll says how",
        dict(probe={"abort": None, "final": 0, "gone": [1]}),
        watch.Decision(watch.POLL_NOW),
    ),
    ("probe: no runner gone", dict(probe={"abort": None, "final": 0, "gone": []}), watch.Decision(watch.WAIT)),
    ("one miss waits", dict(misses=watch.Misses(1, T0)), watch.Decision(watch.WAIT)),
    (
        "two misses in a row fail, naming the server's unfinished ranks and the first miss",
        dict(misses=watch.Misses(2, T0)),
        watch.Decision(watch.FAIL, {"server": "h1", "rank_id": -1, "lost": [0, 1], "since": T0, "error": "stopped answering"}),
    ),
    (
        "two misses, but another server failed first: follow it",
        dict(misses=watch.Misses(2, T0), marker=MARKER),
        watch.Decision(watch.FOLLOW, MARKER),
    ),
    (
        "poll: runners lost without a word, every lost rank named",
        dict(polled=poll("failed", "failed", failed_rank=LOST_RANK, phases=("running", "staged"))),
        watch.Decision(watch.FAIL, {"server": "h1", "rank_id": -1, "lost": [0, 1], "since": None, "error": VANISHED}),
    ),
    (
        "poll: a rank that failed by itself comes before a lost one",
        dict(polled=poll("failed", "failed", failed_rank=dict(FAILED_RANK, phase="exited"), phases=("running", "exited"))),
        watch.Decision(watch.FAIL, dict(FAILED_RANK, phase="exited", server="h1")),
    ),
]


@pytest.mark.parametrize("seen, expected", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_step(seen, expected):
    assert watch.step(watch.Seen("h1", ranks("running", "running"), **seen)) == expected


def test_lost_host_names_only_its_unfinished_ranks():
    seen = watch.Seen("h2", ranks("done", "running", "staged", first=8), misses=watch.Misses(2, T0))
    assert watch.step(seen).failure == {"server": "h2", "rank_id": -1, "lost": [9, 10], "since": T0, "error": "stopped answering"}


@pytest.mark.parametrize(
    "before, answered, after",
    [
        (watch.Misses(), True, watch.Misses()),
        (watch.Misses(), False, watch.Misses(1, 10.0)),  # one miss: the time it was sent
        (watch.Misses(1, 10.0), False, watch.Misses(2, 10.0)),  # two in a row: still the first miss's time
        (watch.Misses(1, 10.0), True, watch.Misses()),  # a miss then an answer starts over
        (watch.Misses(2, 10.0), False, watch.Misses(3, 10.0)),
    ],
)
def test_count_miss(before, answered, after):
    assert watch.count_miss(before, answered, 10.0 if not before.in_a_row else 12.0) == after


def test_one_miss_then_an_answer_does_not_fail():
    misses = watch.count_miss(watch.Misses(), False, T0)
    assert watch.step(watch.Seen("h1", ranks("running"), misses=misses)) == watch.Decision(watch.WAIT)
    misses = watch.count_miss(misses, True, T0 + 0.5)
    misses = watch.count_miss(misses, False, T0 + 1.0)
    assert watch.step(watch.Seen("h1", ranks("running"), misses=misses)) == watch.Decision(watch.WAIT)


def test_probe_before_the_first_poll_knows_no_ranks_and_waits():
    assert watch.step(watch.Seen("h1", [], probe={"abort": None, "final": 0})) == watch.Decision(watch.WAIT)


@pytest.mark.parametrize(
    "ids, text",
    [([], ""), ([3], "3"), ([0, 1, 2, 5, 8, 9], "0-2, 5, 8-9"), ([9, 8, 8, 10], "8-10"), (list(range(8, 16)), "8-15")],
)
def test_rank_ranges(ids, text):
    assert watch.rank_ranges(ids) == text


@pytest.mark.parametrize(
    "failure, message",
    [
        (
            {"server": "h1", "rank_id": 3, "device_id": 3, "rc": 1, "log": "/l", "tail": ["a", "b"]},
            "rank 3 (server h1, device 3) failed first: exit code 1; every rank was stopped. Its log /l ends with:\n    a\n    b",
        ),
        (
            {"server": "h1", "rank_id": 3, "device_id": 3, "rc": 1, "error": "cannot start", "log": "/l", "tail": []},
            "rank 3 (server h1, device 3) failed first: exit code 1 - cannot start; every rank was stopped. Its log /l ends with:\n",
        ),
        (
            {"server": "h1", "rank_id": 3, "device_id": 3, "rc": -9, "log": "/l", "tail": ["oom"]},
            "rank 3 (server h1, device 3) failed first: killed by SIGKILL (signal 9) - not sent by ascend.cluster; the OOM killer?; "
            "every rank was stopped. Its log /l ends with:\n    oom",
        ),
        (
            {"server": "h1", "rank_id": 3, "device_id": 3, "rc": -15, "error": "stopped after running longer than the launch timeout"},
            "rank 3 (server h1, device 3) failed first: stopped after running longer than the launch timeout; every rank was stopped. "
            "Its log - ends with:\n",
        ),
        (
            {"server": "h2", "rank_id": -1, "stopped_by": STOP, "ranks": [8, 9, 10, 11]},
            f"the job was stopped before its ranks finished: {STOP} (ranks 8-11 on server h2 stopped; every rank was stopped)",
        ),
        ({"server": "h2", "rank_id": -1, "error": "cannot poll the server: boom"}, "cannot poll the server: boom"),
        (
            {"server": "h2", "rank_id": -1, "lost": list(range(8, 16)), "since": T0, "error": "stopped answering"},
            f"h2 stopped answering at {time.strftime('%H:%M:%S', time.localtime(T0))}; ranks 8-15 lost; every other rank was stopped",
        ),
        (
            {"server": "h2", "rank_id": -1, "lost": [8, 9, 11], "since": None, "error": VANISHED},
            f"h2: ranks 8-9, 11 lost - {VANISHED}; every other rank was stopped",
        ),
        (
            {"server": "h2", "rank_id": -1, "lost": [11], "since": None, "error": VANISHED},
            f"h2: rank 11 lost - {VANISHED}; every other rank was stopped",
        ),
        (
            {"server": "h2", "rank_id": -1, "lost": [], "since": T0},
            f"h2 stopped answering at {time.strftime('%H:%M:%S', time.localtime(T0))}; its ranks lost; every other rank was stopped",
        ),
        ({}, "the job failed"),
    ],
)
def test_failure_message(failure, message):
    failure.setdefault("log", "-")
    assert watch.failure_message(failure) == message


@pytest.mark.parametrize(
    "claimed, server, replace",
    [
        ({"server": "h1", "rank_id": 1, "early": True}, "h1", True),
        ({"server": "h2", "rank_id": 1, "early": True}, "h1", False),  # another server's early claim stays
        ({"server": "h1", "rank_id": 1, "tail": ["x"]}, "h1", False),  # already complete
    ],
)
def test_an_early_claim_is_replaced_only_by_its_own_server(claimed, server, replace):
    assert watch.supersedes(claimed, server) is replace


@pytest.mark.parametrize(
    ("states", "soon"),
    [(["staged", "staged"], True), (["pending", "running"], True), (["running", "done"], False), ([], False)],
)
def test_ranks_waiting_to_start_are_polled_again_soon(states, soon):
    """A full poll, or the stage's reading that replaces the watch's first one, while ranks wait at the gate: the next
    full poll comes soon, with the pids the start brings (a follower's fast stop TERMs them; without them it must
    wait for state=stop, failfast_s 0.5-0.6 s instead of 0.1-0.3 s on the bed)."""
    ranks = [{"rank_id": i, "state": state} for i, state in enumerate(states)]
    assert watch.waiting(ranks) is soon
