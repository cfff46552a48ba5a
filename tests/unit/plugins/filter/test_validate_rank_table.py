"""Filter ascend.cluster.validate_rank_table: existing tables checked the way HCCL loads them."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.ascend.cluster.plugins.filter.rank_table import FilterModule, rank_table, validate_rank_table
from tests.helpers.clusters import seed_table, superpod_cluster
from tests.helpers.filters import refusal

SEEDS = ["seed001_8p.json", "seed001_16p.json", "seed002_8p.json", "seed002_4p_4567.json", "seed003_template2_16p.json"]


def test_filter_is_registered_under_its_name():
    assert FilterModule().filters()["validate_rank_table"] is validate_rank_table


@pytest.mark.parametrize("name", SEEDS)
def test_seed_tables_pass_for_910a(name):
    table = seed_table(name)
    assert validate_rank_table(table, chip="910A") == table


def test_json_text_is_parsed():
    text = json.dumps(seed_table("seed001_16p.json"))
    assert validate_rank_table(text) == seed_table("seed001_16p.json")


def test_built_1_2_table_passes_for_a3():
    table = rank_table(superpod_cluster(2, 4), chip="A3")
    assert validate_rank_table(table, chip="A3", version="1.2") is table


def test_template2_as_the_cann_manual_writes_it():
    """device_count instead of device_num, pod_name, no server_num, ranks in list order."""
    table: dict[str, Any] = {
        "status": "completed",
        "group_count": "1",
        "group_list": [
            {
                "group_name": "hccl_world_group",
                "instance_count": "2",
                "device_count": "2",
                "instance_list": [
                    {"pod_name": "tf-bae41", "server_id": "node_0", "devices": [{"device_id": "0", "device_ip": "192.168.1.8"}]},
                    {"pod_name": "tf-tbdf1", "server_id": "node_1", "devices": [{"device_id": "1", "device_ip": "192.168.1.9"}]},
                ],
            }
        ],
    }
    assert validate_rank_table(table) is table
    table["group_list"][0]["device_count"] = "3"
    with pytest.raises(AnsibleFilterError, match="device_count is 3 but instance_list has 2 entries"):
        validate_rank_table(table)


def _seed16():
    return seed_table("seed001_16p.json")


def _edit(name, change):
    table = seed_table(name)
    change(table)
    return table


def _dev(table, server, device):
    return table["server_list"][server]["device"][device]


BAD = [
    ("not json", "{oops", {}, "the rank table is not valid JSON"),
    ("not a mapping", ["x"], {}, "a rank table must be a mapping"),
    ("unknown version", _edit("seed001_8p.json", lambda t: t.update(version="2.0")), {}, "rank table version '2.0' is not known"),
    (
        "server_count mismatch",
        _edit("seed001_16p.json", lambda t: t.update(server_count="3")),
        {},
        "server_count is 3 but server_list has 2 entries",
    ),
    (
        "integer rank_id as merge_hccl.py writes",
        _edit("seed001_16p.json", lambda t: _dev(t, 1, 0).update(rank_id=8)),
        {},
        "server 10.155.111.141 device 0: rank_id must be a string, got 8 (merge_hccl.py writes integers",
    ),
    (
        "rank ids not starting at 0",
        _edit("seed001_8p.json", lambda t: [d.update(rank_id=str(int(d["rank_id"]) + 1)) for d in t["server_list"][0]["device"]]),
        {},
        "rank_id 8 is outside 0..7",
    ),
    (
        "rank id used twice",
        _edit("seed001_16p.json", lambda t: _dev(t, 1, 7).update(rank_id="3")),
        {},
        "rank_id 3 is used more than once",
    ),
    (
        "device id beyond 910A",
        _edit("seed001_8p.json", lambda t: _dev(t, 0, 7).update(device_id="9")),
        {"chip": "910A"},
        "server 10.155.111.140: device_id 9 is out of range for 910A (0-7)",
    ),
    (
        "device id as integer",
        _edit("seed001_8p.json", lambda t: _dev(t, 0, 7).update(device_id=7)),
        {},
        "device_id must be a string, got 7",
    ),
    (
        "missing device_ip with two servers",
        _edit("seed001_16p.json", lambda t: _dev(t, 1, 2).pop("device_ip")),
        {},
        "server 10.155.111.141 device 2 has no device_ip, which a multi-server table needs",
    ),
    (
        "duplicate server_id",
        _edit("seed001_16p.json", lambda t: t["server_list"][1].update(server_id="10.155.111.140")),
        {},
        "server_id 10.155.111.140 appears more than once",
    ),
    (
        "still being written",
        _edit("seed001_8p.json", lambda t: t.update(status="initializing")),
        {},
        "status is 'initializing', not 'completed'",
    ),
    ("1.0 table for an A3", _seed16(), {"chip": "A3"}, "A3 reads rank table version 1.2, not 1.0"),
    ("explicit version expected", _seed16(), {"version": "1.2"}, "the table is version 1.0 but 1.2 is expected here"),
    (
        "template2 device_num mismatch",
        _edit("seed003_template2_16p.json", lambda t: t["group_list"][0].update(device_num="8")),
        {},
        "group_list[0]: device_num is 8 but instance_list has 16 entries",
    ),
    (
        "template2 server_num mismatch",
        _edit("seed003_template2_16p.json", lambda t: t["group_list"][0].update(server_num="1")),
        {},
        "server_num is 1 but 2 servers are listed",
    ),
    (
        "template2 without a device count",
        _edit("seed003_template2_16p.json", lambda t: t["group_list"][0].pop("device_num")),
        {},
        "group_list[0]: device_num (or device_count) is missing",
    ),
    (
        "template2 group_count mismatch",
        _edit("seed003_template2_16p.json", lambda t: t.update(group_count="2")),
        {},
        "group_count is 2 but group_list has 1 entries",
    ),
    (
        "template2 duplicate device ip",
        _edit(
            "seed003_template2_16p.json",
            lambda t: t["group_list"][0]["instance_list"][9]["devices"][0].update(device_ip="192.168.10.1"),
        ),
        {},
        "server 192.168.3.2 device 1: device_ip 192.168.10.1 is already used by server 192.168.3.6 device 0",
    ),
]


def _table_1_2(change):
    """Version 1.2 has no seed table: start from one the builder wrote (checked in test_rank_table)."""
    table = rank_table(superpod_cluster(2, 2), chip="A3")
    change(table)
    return table


BAD += [
    (
        "1.2 empty super_device_id",
        _table_1_2(lambda t: _dev(t, 1, 1).update(super_device_id="")),
        {"chip": "A3"},
        "server 10.1.0.2 device 1: version 1.2 needs a non-empty super_device_id",
    ),
    (
        "1.2 super pod names an unknown server",
        _table_1_2(lambda t: t["super_pod_list"][0]["server_list"].append({"server_id": "10.9.9.9"})),
        {"chip": "A3"},
        "super pod 0 lists server 10.9.9.9, which is not in server_list",
    ),
    (
        "1.2 super pods interleaved",
        rank_table([{**s, "super_pod_id": pod} for s, pod in zip(superpod_cluster(3, 1), ["0", "1", "2"])], chip="A3")
        | {
            "super_pod_list": [
                {"super_pod_id": "0", "server_list": [{"server_id": "10.1.0.1"}, {"server_id": "10.1.0.3"}]},
                {"super_pod_id": "1", "server_list": [{"server_id": "10.1.0.2"}]},
            ]
        },
        {"chip": "A3"},
        "server 10.1.0.3: the servers of super pod 0 must be listed together",
    ),
    (
        "1.2 server outside every super pod",
        _table_1_2(lambda t: t["super_pod_list"][0]["server_list"].pop()),
        {"chip": "A3"},
        "server 10.1.0.2: version 1.2 needs super_pod_id",
    ),
]


@pytest.mark.parametrize("table, options, message", [case[1:] for case in BAD], ids=[case[0] for case in BAD])
def test_refusals(table, options, message):
    before = copy.deepcopy(table)
    assert message in refusal(validate_rank_table, table, **options)
    assert table == before
