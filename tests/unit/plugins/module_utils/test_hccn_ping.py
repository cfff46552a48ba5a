"""hccn_tool -ping: the parser (reference section 1's output), HccnTool.ping and the hccn_ping module's loop.

A lost packet fails the real command (`Command execute failed!`) after it printed its summary on
stdout: that is an answer with counts, not a device error.
"""

from __future__ import annotations

import pytest

from ansible_collections.ascend.cluster.plugins.module_utils._hccn import parse as p
from ansible_collections.ascend.cluster.plugins.module_utils._hccn import tool as t
from ansible_collections.ascend.cluster.plugins.modules import hccn_ping
from tests.unit.plugins.module_utils.hccn_fakes import EXEC_FAILED, HCCN, INVALID_DEVICE, FakeModule

ALL_BACK = (
    "device 0 PING 198.19.0.2\n"
    "recv seq=0,time=0.114000ms\nrecv seq=1,time=0.098000ms\nrecv seq=2,time=0.102000ms\n"
    "3 packets transmitted, 3 received, 0.00% packet loss\n"
)
ONE_LOST = (
    "device 3 PING 198.19.3.2\n"
    "recv seq=0,time=0.120000ms\nrecv time out seq=1\nrecv seq=2,time=0.080000ms\n"
    "3 packets transmitted, 2 received, 33.33% packet loss\n"
)
ALL_LOST = (
    "device 3 PING 198.19.3.2\nrecv time out seq=0\nrecv time out seq=1\nrecv time out seq=2\n"
    "3 packets transmitted, 0 received, 100.00% packet loss\n"
)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (ALL_BACK, {"sent": 3, "received": 3, "loss_pct": 0.0, "times_ms": [0.114, 0.098, 0.102]}),
        (ONE_LOST, {"sent": 3, "received": 2, "loss_pct": 33.33, "times_ms": [0.12, 0.08]}),
        (ALL_LOST, {"sent": 3, "received": 0, "loss_pct": 100.0, "times_ms": []}),
        ("1 packet transmitted, 1 received, 0% packet loss\n", {"sent": 1, "received": 1, "loss_pct": 0.0, "times_ms": []}),
    ],
)
def test_parse_ping(raw, expected):
    assert p.parse_ping(raw) == expected


def test_a_ping_answer_without_its_summary_is_refused_with_the_raw_text():
    with pytest.raises(p.ParseError, match="device 0 PING"):
        p.parse_ping("device 0 PING 198.19.0.2\n")


def ping_call(device, address):
    return (HCCN, "-i", str(device), "-ping", "-g", "address", address)


def tool(transcript):
    module = FakeModule(transcript=transcript)
    return t.HccnTool(module, HCCN, runner=module.run_tool)


def test_lost_packets_are_counts_although_the_command_failed():
    answers = tool({ping_call(3, "198.19.3.2"): (1, ALL_LOST, EXEC_FAILED[2])})
    assert answers.ping(3, "198.19.3.2")["received"] == 0


@pytest.mark.parametrize(("answer", "kind"), [(INVALID_DEVICE, t.DEVICE), ((3, "", "Get unknown option!\n"), t.USAGE)])
def test_a_failure_without_a_summary_is_classified(answer, kind):
    with pytest.raises(t.HccnError) as caught:
        tool({ping_call(9, "198.19.3.2"): answer}).ping(9, "198.19.3.2")
    assert caught.value.kind == kind


def test_the_module_reports_every_pair_and_fails_only_for_calls_without_an_answer():
    targets = [
        {"device_id": 0, "address": "198.19.0.2", "peer": "server1 device 0"},
        {"device_id": 3, "address": "198.19.3.2", "peer": "server1 device 3"},
        {"device_id": 3, "address": "198.19.3.3", "peer": ""},
        {"device_id": 9, "address": "198.19.9.2", "peer": "server1 device 9"},
    ]
    answers = tool(
        {
            ping_call(0, "198.19.0.2"): (0, ALL_BACK, ""),
            ping_call(3, "198.19.3.2"): (1, ONE_LOST, EXEC_FAILED[2]),
            ping_call(3, "198.19.3.3"): (1, ALL_LOST, EXEC_FAILED[2]),
            ping_call(9, "198.19.9.2"): INVALID_DEVICE,
        }
    )
    results, errors = hccn_ping.ping_all(answers, targets, parallel=4)
    assert [(r["peer"], r["ok"], r["received"], r["avg_ms"]) for r in results] == [
        ("server1 device 0", True, 3, 0.105),
        ("server1 device 3", False, 2, 0.1),
        ("", False, 0, None),
    ]
    assert errors == ["device 9 -> server1 device 9: Get invalid device id."]
