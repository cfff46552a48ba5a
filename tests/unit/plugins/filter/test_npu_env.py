"""Filter ascend.cluster.npu_env: the seed launcher's --env syntax."""

from __future__ import annotations

import pytest

from ansible_collections.ascend.cluster.plugins.filter.rank_table import FilterModule, npu_env, rank_table
from tests.helpers.clusters import seed001_server
from tests.helpers.filters import refusal


def test_filter_is_registered_under_its_name():
    assert FilterModule().filters()["npu_env"] is npu_env


def _ids(servers):
    return [(s["server_id"], [d["device_id"] for d in s["devices"]]) for s in servers]


@pytest.mark.parametrize(
    "spec, options, expected",
    [
        ("10.10.10.10:8", {}, [("10.10.10.10", list(range(8)))]),
        ("10.10.10.10:4:0123", {"np": 4}, [("10.10.10.10", [0, 1, 2, 3])]),
        ("10.0.0.1:8,10.0.0.2:4:0123", {"np": 12}, [("10.0.0.1", list(range(8))), ("10.0.0.2", [0, 1, 2, 3])]),
        ("10.10.10.10:4:0123,10.10.10.11:4:1234", {}, [("10.10.10.10", [0, 1, 2, 3]), ("10.10.10.11", [1, 2, 3, 4])]),
        (" 10.0.0.1 : 2 : 54 ", {}, [("10.0.0.1", [4, 5])]),
        ("node1:8:8-15", {"chip": "A2"}, [("node1", list(range(8, 16)))]),
        ("node1:4:0/1/10/11", {"chip": "A3"}, [("node1", [0, 1, 10, 11])]),
        ("10.0.0.1:16", {"chip": "A2", "np": "16"}, [("10.0.0.1", list(range(16)))]),
    ],
)
def test_specs(spec, options, expected):
    assert _ids(npu_env(spec, **options)) == expected


def test_available_servers_supply_device_ips_for_rank_table():
    facts = [seed001_server("10.0.0.1", 6), seed001_server("10.0.0.2", 8)]
    facts[1]["host"] = "node2"
    servers = npu_env("10.0.0.2:8,10.0.0.1:8", chip="910A", available=facts)
    assert servers[0]["host"] == "node2"
    assert servers[0]["devices"][0] == {"device_id": 0, "device_ip": "192.1.27.8"}
    table = rank_table(servers, chip="910A", order="given")
    assert [s["server_id"] for s in table["server_list"]] == ["10.0.0.2", "10.0.0.1"]


@pytest.mark.parametrize(
    "spec, options, message",
    [
        ("", {}, "'' is not an --env string"),
        ("10.0.0.1", {}, "--env entry '10.0.0.1' is not 'server:count' or 'server:count:ids'"),
        ("10.0.0.1:four", {}, "is not 'server:count'"),
        ("10.0.0.1:4:012", {}, "--env entry '10.0.0.1:4:012': says 4 devices but lists 3"),
        ("10.0.0.1:0", {}, "says 0 devices"),
        ("10.0.0.1:2:00", {}, "device 0 is listed more than once"),
        ("10.0.0.1:8,10.0.0.1:8", {}, "server 10.0.0.1 appears more than once"),
        ("10.0.0.1:2:89", {"chip": "910A"}, "device_id 8 is out of range for 910A (0-7)"),
        ("10.0.0.1:16", {"chip": "910A"}, "910A has at most 8 devices per server"),
        ("10.0.0.1:2:a-b", {}, "device ids 'a-b' are not readable"),
        ("10.0.0.1:2:5-4", {}, "device range '5-4' runs backwards"),
        ("10.0.0.1:8", {"np": 16}, "np is 16 but '10.0.0.1:8' lists 8 devices"),
        ("10.0.0.3:8", {"available": [seed001_server("10.0.0.1", 6)]}, "server 10.0.0.3 is not among the available servers (10.0.0.1)"),
        (
            "10.0.0.1:2:01",
            {"available": [{"server_id": "10.0.0.1", "devices": [{"device_id": 0, "device_ip": "192.168.0.1"}]}]},
            "server 10.0.0.1 has no device 1 available (it has [0])",
        ),
        ("10.0.0.1:8", {"available": {"10.0.0.1": []}}, "available: the input must be a list of servers"),
        (
            "10.0.0.1:1",
            {"chip": "910A", "available": [{"server_id": "10.0.0.1", "devices": [{"device_id": 9}]}]},
            "available: server 10.0.0.1: device_id 9 is out of range for 910A",
        ),
    ],
)
def test_bad_specs(spec, options, message):
    assert message in refusal(npu_env, spec, **options)
