"""plugin_utils._launch.clock: the NTP-style offset from several readings, and the warn / refuse decision."""

from __future__ import annotations

import pytest

from ansible_collections.ascend.cluster.plugins.plugin_utils._launch.clock import Offset, Sample, best_offset, describe, judge

T = 1_800_000_000.0  # any epoch time


@pytest.mark.parametrize(
    "samples, offset, uncertainty, rtt",
    [
        # one reading, server exactly in the middle of a 10 ms round trip, 30 s behind
        ([Sample(T, T + 0.005 - 30, T + 0.010)], -30.0, 0.005, 0.010),
        # the quickest round trip wins, even when a slow one happened to read "0"
        (
            [Sample(T, T + 0.200, T + 0.400), Sample(T + 1, T + 1.0015 + 2.5, T + 1.003), Sample(T + 2, T + 2.05, T + 2.1)],
            2.5,
            0.0015,
            0.003,
        ),
        # a slow first reading (connection set-up) is outweighed by a later quick one
        ([Sample(T, T + 0.9, T + 1.8), Sample(T + 2, T + 2.001, T + 2.002)], 0.0, 0.001, 0.002),
        # a zero round trip (a coarse controller clock) is usable: uncertainty 0
        ([Sample(T, T + 5, T)], 5.0, 0.0, 0.0),
        # a reading whose controller clock stepped back is skipped
        ([Sample(T + 1, T + 100, T), Sample(T, T - 0.25 + 0.01, T + 0.02)], -0.25, 0.01, 0.02),
    ],
)
def test_best_offset_keeps_the_quickest_round_trip(samples, offset, uncertainty, rtt):
    got = best_offset(samples)
    assert got.offset == pytest.approx(offset, abs=1e-6)
    assert got.uncertainty == pytest.approx(uncertainty, abs=1e-6)
    assert got.rtt == pytest.approx(rtt, abs=1e-6)
    assert got.samples == len([s for s in samples if s.t_recv >= s.t_send])


def test_best_offset_needs_one_usable_sample():
    with pytest.raises(ValueError, match="no usable clock sample among 0"):
        best_offset([])
    with pytest.raises(ValueError, match="no usable clock sample among 1"):
        best_offset([Sample(T + 1, T, T)])


@pytest.mark.parametrize("offset, text", [(-30.0021, "30.002 s behind"), (2.5, "2.500 s ahead of"), (0.0, "0.000 s ahead of")])
def test_describe(offset, text):
    assert describe(offset) == text


def measured(offset: float) -> Offset:
    return Offset(offset, 0.004, 0.008, 5)


@pytest.mark.parametrize(
    "offset, allow, status, words",
    [
        (0.0, False, "ok", []),
        (0.999, False, "ok", []),
        (-1.0, False, "ok", []),  # at the threshold: not above it
        (1.2, False, "warn", ["h2 is 1.200 s ahead of the controller", "more than 1 s", "chrony"]),
        (-30.0, False, "warn", ["h2 is 30.000 s behind the controller", "(+/- 0.004 s)", "chrony"]),
        (
            -30.5,
            False,
            "refuse",
            [
                "30.500 s behind",
                "more than 30 s (a quarter of HCCL_CONNECT_TIMEOUT)",
                "logs",
                "chrony",
                "ascend_launch_allow_clock_skew=true",
            ],
        ),
        (600.0, False, "refuse", ["600.000 s ahead of"]),
        (-30.5, True, "warn", ["launching anyway as ascend_launch_allow_clock_skew is set", "logs' timestamps", "chrony"]),
    ],
)
def test_judge_warns_then_refuses_unless_allowed(offset, allow, status, words):
    verdict = judge("h2", measured(offset), warn_above=1.0, refuse_above=30.0, allow=allow)
    assert verdict.status == status
    assert (verdict.msg == "") == (status == "ok")
    for word in words:
        assert word in verdict.msg, (word, verdict.msg)


def answers(*outputs):
    """A fake low-level command runner: each call answers the next (rc, stdout) and records the command."""
    calls = []
    queue = list(outputs)

    def run(command):
        calls.append(command)
        rc, out = queue.pop(0)
        return {"rc": rc, "stdout": out, "stderr": ""}

    return run, calls


@pytest.mark.parametrize(
    ("outputs", "samples", "commands", "status"),
    [
        ([(0, "1800000000.5")] * 3, 3, ["date +%s.%N"] * 3, "refuse"),  # a fixed reading far from now
        # date without %N prints "...N": the server's Python from then on
        ([(0, "1800000000.N"), (0, "1800000000.25"), (0, "1800000000.5")], 2, ["date +%s.%N", "py", "py"], "refuse"),
    ],
    ids=["date", "python fallback"],
)
def test_measure_reads_the_clock_through_the_runner(outputs, samples, commands, status):
    from ansible_collections.ascend.cluster.plugins.plugin_utils._launch.clock import PYTHON, measure

    run, calls = answers(*outputs)
    measured = measure(run, "h1", samples, 1.0, 30.0, False, python="/usr/bin/python3")
    assert [c if c.startswith("date") else "py" for c in calls] == commands
    assert all(c == PYTHON.format(python="/usr/bin/python3") for c in calls if not c.startswith("date"))
    assert measured["status"] == status and measured["samples"] == samples and measured["server"] == "h1"
    assert "the clock of h1 is" in measured["msg"]


@pytest.mark.parametrize(
    ("outputs", "samples", "message"),
    [
        ([(0, "x"), (1, "")], 2, "cannot read the clock of h1: `"),
        ([(0, "1.0")], 0, "cannot read the clock of h1: samples must be 1 or more, not 0"),
    ],
    ids=["unreadable", "no samples"],
)
def test_measure_fails_naming_what_it_read(outputs, samples, message):
    from ansible_collections.ascend.cluster.plugins.plugin_utils._launch.clock import measure

    run, _calls = answers(*outputs)
    measured = measure(run, "h1", samples, 1.0, 30.0, False)
    assert measured["failed"] and measured["msg"].startswith(message), measured
