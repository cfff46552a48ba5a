"""Filter ascend.cluster.rank_table: the seeds' tables reproduced, every layout, every refusal."""

from __future__ import annotations

import copy
import json

import pytest
from ansible.errors import AnsibleFilterError
from ansible.utils.display import Display

from ansible_collections.ascend.cluster.plugins.filter.rank_table import FilterModule, device_range, rank_table
from tests.helpers.clusters import (
    a2_cluster,
    seed001_server,
    seed002_server,
    seed003_server,
    seed_table,
    server,
    superpod_cluster,
)
from tests.helpers.filters import refusal


def test_filter_is_registered_under_its_name():
    assert FilterModule().filters()["rank_table"] is rank_table


# ---------------------------------------------------------------- the seeds are the ground truth


def test_seed001_8_devices():
    assert rank_table([seed001_server("10.155.111.140", 6)], chip="910A") == seed_table("seed001_8p.json")


def test_seed001_16_devices_follow_dictionary_order_of_server_id():
    servers = [seed001_server("10.155.111.141", 8), seed001_server("10.155.111.140", 6)]
    servers[0]["devices"].reverse()  # input order of devices does not matter either
    assert rank_table(servers, chip="910A") == seed_table("seed001_16p.json")


def test_seed002_8_devices_from_hccl_tools():
    assert rank_table([seed002_server()]) == seed_table("seed002_8p.json")


def test_seed002_devices_4_to_8_via_device_range():
    wanted = device_range("[4,8)", chip="910A")
    facts = seed002_server()
    facts["devices"] = [d for d in facts["devices"] if d["device_id"] in wanted]
    assert rank_table([facts], chip="910A") == seed_table("seed002_4p_4567.json")


def test_seed003_template2_given_order_arm_board():
    servers = [seed003_server("192.168.3.6", 1), seed003_server("192.168.3.2", 3)]
    table = rank_table(servers, version="template2", order="given", board_id="0x0020", chip="910A")
    assert table == seed_table("seed003_template2_16p.json")


def test_output_is_all_strings_and_json_round_trips():
    table = rank_table([seed001_server("10.155.111.140", 6)])

    def walk(value):
        if isinstance(value, dict):
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)
        else:
            assert isinstance(value, str), value

    walk(table)
    assert json.loads(json.dumps(table)) == table


# ---------------------------------------------------------------- ordering and options


@pytest.mark.parametrize(
    "order, expected",
    [("server_id", ["10.0.0.10", "10.0.0.2", "10.0.0.3"]), ("given", ["10.0.0.3", "10.0.0.10", "10.0.0.2"])],
)
def test_order(order, expected):
    servers = [server(sid, {0: f"192.168.{n}.1", 1: f"192.168.{n}.2"}) for n, sid in enumerate(["10.0.0.3", "10.0.0.10", "10.0.0.2"])]
    table = rank_table(servers, order=order)
    assert [s["server_id"] for s in table["server_list"]] == expected
    ranks = [(d["rank_id"], d["device_id"]) for s in table["server_list"] for d in s["device"]]
    assert ranks == [(str(r), str(r % 2)) for r in range(6)]


def test_device_ids_as_strings_are_accepted_and_sorted_numerically():
    facts = server("10.0.0.1", {10: "192.168.0.10", 2: "192.168.0.2", 9: "192.168.0.9"})
    for device in facts["devices"]:
        device["device_id"] = str(device["device_id"])
    table = rank_table([facts], chip="910B")
    assert [d["device_id"] for d in table["server_list"][0]["device"]] == ["2", "9", "10"]


def test_single_server_without_ips_leaves_the_key_out_and_warns(monkeypatch):
    warnings: list[str] = []
    monkeypatch.setattr(Display, "warning", lambda self, msg, *a, **k: warnings.append(msg))
    table = rank_table([{"server_id": "10.0.0.1", "devices": [{"device_id": 0, "device_ip": ""}, {"device_id": 1}]}])
    assert table["server_list"][0]["device"] == [{"device_id": "0", "rank_id": "0"}, {"device_id": "1", "rank_id": "1"}]
    assert warnings == [
        "rank_table: server 10.0.0.1 devices 0-1 have no device_ip: HCCL accepts that only while the job stays inside one "
        "server (version 1.2: one super pod); give them IPs (ansible-playbook ascend.cluster.prepare) before it spans more"
    ]


def test_a_table_with_every_ip_does_not_warn(monkeypatch):
    warnings: list[str] = []
    monkeypatch.setattr(Display, "warning", lambda self, msg, *a, **k: warnings.append(msg))
    rank_table([seed002_server()])
    assert warnings == []


def test_every_device_without_ip_is_named_in_one_refusal():
    servers = _with(
        lambda s: [s[0]["devices"][d].update(device_ip="") for d in (0, 1, 2, 5)] + [d.update(device_ip="") for d in s[1]["devices"]]
    )
    with pytest.raises(AnsibleFilterError) as info:
        rank_table(servers)
    assert str(info.value).startswith(
        "rank_table: server 10.0.0.1 devices 0-2, 5, server 10.0.0.2 devices 0-7 have no device_ip, which a multi-server table needs; "
        "give them IPs (ansible-playbook ascend.cluster.prepare"
    )


def test_status_initializing():
    assert rank_table([seed002_server()], status="initializing")["status"] == "initializing"


def test_version_as_float_from_yaml_is_understood():
    assert rank_table([seed002_server()], version=1.0)["version"] == "1.0"


def test_version_1_2_superpod_layout():
    table = rank_table(superpod_cluster(2, 2), chip="A3")
    assert table == {
        "version": "1.2",
        "server_count": "2",
        "server_list": [
            {
                "server_id": "10.1.0.1",
                "host_ip": "10.1.0.1",
                "device": [
                    {"device_id": "0", "device_ip": "172.20.0.1", "super_device_id": "0", "rank_id": "0"},
                    {"device_id": "1", "device_ip": "172.20.0.2", "super_device_id": "1", "rank_id": "1"},
                ],
            },
            {
                "server_id": "10.1.0.2",
                "host_ip": "10.1.0.2",
                "device": [
                    {"device_id": "0", "device_ip": "172.20.1.1", "super_device_id": "2", "rank_id": "2"},
                    {"device_id": "1", "device_ip": "172.20.1.2", "super_device_id": "3", "rank_id": "3"},
                ],
            },
        ],
        "super_pod_list": [{"super_pod_id": "0", "server_list": [{"server_id": "10.1.0.1"}, {"server_id": "10.1.0.2"}]}],
        "status": "completed",
    }


def test_version_1_2_host_ip_and_device_ip_are_optional_inside_one_super_pod():
    servers = superpod_cluster(2, 2)
    for entry in servers:
        del entry["host_ip"]
        for device in entry["devices"]:
            device["device_ip"] = ""
    table = rank_table(servers, chip="A3")
    assert [sorted(s) for s in table["server_list"]] == [["device", "server_id"]] * 2
    assert table["server_list"][1]["device"][0] == {"device_id": "0", "super_device_id": "2", "rank_id": "2"}


def test_version_1_2_keeps_the_servers_of_a_super_pod_together():
    servers = superpod_cluster(4, 1)
    for entry, pod in zip(servers, ["b", "a", "b", "a"]):
        entry["super_pod_id"] = pod
    table = rank_table(servers, chip="A3")  # dictionary order of server_id, then grouped by pod
    assert [s["server_id"] for s in table["server_list"]] == ["10.1.0.1", "10.1.0.3", "10.1.0.2", "10.1.0.4"]
    assert table["super_pod_list"] == [
        {"super_pod_id": "b", "server_list": [{"server_id": "10.1.0.1"}, {"server_id": "10.1.0.3"}]},
        {"super_pod_id": "a", "server_list": [{"server_id": "10.1.0.2"}, {"server_id": "10.1.0.4"}]},
    ]
    assert [d["rank_id"] for s in table["server_list"] for d in s["device"]] == ["0", "1", "2", "3"]


def test_template2_nic_names_follow_devices_and_can_be_given():
    facts = [server("10.0.0.1", {4: "192.168.0.4", 5: "192.168.0.5"})]
    table = rank_table(facts, version="template2", chip="910A")
    assert table["para_plane_nic_name"] == ["eth4", "eth5"] and table["para_plane_nic_num"] == "2"
    table = rank_table(facts, version="template2", para_plane_nic_name=["eth0"], group_name="g", deploy_mode="x")
    assert table["para_plane_nic_name"] == ["eth0"] and table["para_plane_nic_num"] == "1"
    assert table["group_list"][0]["group_name"] == "g" and table["deploy_mode"] == "x"
    assert table["board_id"] == "0x0000" and table["chip_info"] == "910"


def test_910a_partial_servers_allowed_by_option():
    servers = [server(f"10.0.0.{n}", {0: f"192.168.{n}.1", 1: f"192.168.{n}.2"}) for n in (1, 2)]
    table = rank_table(servers, chip="910A", allow_partial_servers=True)
    assert table["server_count"] == "2"


def test_input_is_not_modified():
    servers = [seed001_server("10.155.111.141", 8), seed001_server("10.155.111.140", 6)]
    before = copy.deepcopy(servers)
    rank_table(servers)
    assert servers == before


# ---------------------------------------------------------------- refusals, each naming what to fix


def _two_servers():
    return [seed001_server("10.0.0.1", 6), seed001_server("10.0.0.2", 8)]


def _with(mutate, servers=None):
    servers = servers if servers is not None else _two_servers()
    mutate(servers)
    return servers


BAD = [
    ("empty input", [], {}, "no servers given"),
    ("not a list", {"server_id": "x"}, {}, "must be a list of servers"),
    ("server without devices", [{"server_id": "10.0.0.1", "devices": []}], {}, "server 10.0.0.1 has no devices"),
    ("devices not a list", [{"server_id": "10.0.0.1", "devices": "0-7"}], {}, "server 10.0.0.1: devices must be a list"),
    ("no server_id", [{"devices": [{"device_id": 0}]}], {}, "a server has no server_id"),
    (
        "duplicate server_id",
        _with(lambda s: s[1].update(server_id="10.0.0.1")),
        {},
        "server_id 10.0.0.1 appears more than once",
    ),
    (
        "duplicate device_ip across servers",
        _with(lambda s: s[1]["devices"][3].update(device_ip="192.1.27.6")),
        {},
        "server 10.0.0.2 device 3: device_ip 192.1.27.6 is already used by server 10.0.0.1 device 0",
    ),
    (
        "invalid ip",
        _with(lambda s: s[1]["devices"][2].update(device_ip="192.168.1")),
        {},
        "server 10.0.0.2 device 2: device_ip '192.168.1' is not a valid device IP address",
    ),
    (
        "unreadable ip as npu-smi prints it",
        _with(lambda s: s[0]["devices"][5].update(device_ip="-.-.-.-")),
        {},
        "server 10.0.0.1 device 5: device_ip '-.-.-.-' is not a valid device IP address",
    ),
    (
        "unset address",
        _with(lambda s: s[0]["devices"][1].update(device_ip="0.0.0.0")),
        {},
        "server 10.0.0.1 device 1: device_ip '0.0.0.0' is not a valid device IP address",
    ),
    (
        "server_id longer than HCCL takes",
        [server("n" * 65, {0: "192.168.0.1"})],
        {},
        "is longer than HCCL's 64 characters",
    ),
    (
        "missing ip in multi-server table",
        _with(lambda s: s[1]["devices"][7].update(device_ip="")),
        {},
        "server 10.0.0.2 device 7 has no device_ip, which a multi-server table needs",
    ),
    (
        "device id out of range on 910A",
        [server("10.0.0.1", {8: "192.168.0.8"})],
        {"chip": "910A"},
        "server 10.0.0.1: device_id 8 is out of range for 910A (0-7)",
    ),
    (
        "device id out of range on A2",
        [server("10.0.0.1", {16: "192.168.0.8"})],
        {"chip": "A2"},
        "device_id 16 is out of range for 910B (0-15)",
    ),
    (
        "device id not a number",
        [{"server_id": "10.0.0.1", "devices": [{"device_id": "npu0"}]}],
        {},
        "server 10.0.0.1: device_id 'npu0' is not a whole number",
    ),
    (
        "device listed twice",
        [{"server_id": "10.0.0.1", "devices": [{"device_id": 1}, {"device_id": "1"}]}],
        {},
        "server 10.0.0.1: device_id 1 is listed more than once",
    ),
    (
        "910A single server with 3 devices",
        [server("10.0.0.1", {0: "192.168.0.1", 1: "192.168.0.2", 2: "192.168.0.3"})],
        {"chip": "910A"},
        "910A runs 1, 2, 4 or 8 devices per server, got 3 {0, 1, 2}",
    ),
    (
        "910A pair across rings",
        [server("10.0.0.1", {3: "192.168.0.1", 4: "192.168.0.2"})],
        {"chip": "910A"},
        "devices {3, 4} span two HCCS rings",
    ),
    (
        "910A four across rings",
        [server("10.0.0.1", {2: "192.168.0.1", 3: "192.168.0.2", 4: "192.168.0.3", 5: "192.168.0.4"})],
        {"chip": "910A"},
        "must stay inside {0, 1, 2, 3} or {4, 5, 6, 7}",
    ),
    (
        "910A cluster not 8 x N",
        _with(lambda s: s[1].update(devices=s[1]["devices"][:4])),
        {"chip": "910A"},
        "server 10.0.0.2: 910A clusters use all 8 devices of every server (8 x N), got 4",
    ),
    (
        "910A partial servers with different counts",
        _with(lambda s: s[1].update(devices=s[1]["devices"][:4])),
        {"chip": "910A", "allow_partial_servers": True},
        "910A needs the same number of devices on every server, got 10.0.0.1: 8, 10.0.0.2: 4",
    ),
    (
        "910A partial servers across rings",
        _with(lambda s: [x.update(devices=x["devices"][2:4] + x["devices"][4:6]) for x in s]),
        {"chip": "910A", "allow_partial_servers": True},
        "server 10.0.0.1: devices {2, 3, 4, 5} span two HCCS rings",
    ),
    ("unknown chip", _two_servers(), {"chip": "H100"}, "unknown chip 'H100'"),
    ("unknown version", _two_servers(), {"version": "2.0"}, "version '2.0' is not known"),
    ("wrong version for the chip", _two_servers(), {"version": "1.0", "chip": "A3"}, "A3 reads rank table version 1.2, not 1.0"),
    ("template2 is for 910A", _two_servers(), {"version": "template2", "chip": "910B"}, "910B reads rank table version 1.0"),
    ("unknown order", _two_servers(), {"order": "random"}, "order 'random' is not known"),
    ("unknown status", _two_servers(), {"status": "done"}, "status 'done' is not known"),
    (
        "1.2 without super_device_id",
        _with(lambda s: s[1]["devices"][1].update(super_device_id=""), superpod_cluster(2, 2)),
        {"chip": "A3"},
        "server 10.1.0.2 device 1: version 1.2 needs a non-empty super_device_id (HCCL rejects an empty one)",
    ),
    (
        "1.2 duplicate super_device_id",
        _with(lambda s: s[1]["devices"][1].update(super_device_id="0"), superpod_cluster(2, 2)),
        {"chip": "A3"},
        "super_device_id 0 is already used by server 10.1.0.1 device 0 in super pod 0",
    ),
    (
        "1.2 host_ip not IPv4",
        _with(lambda s: s[0].update(host_ip="fe80::1"), superpod_cluster(2, 2)),
        {"version": "1.2"},
        "server 10.1.0.1: host_ip 'fe80::1' is not an IPv4 address",
    ),
    (
        "1.2 device without IP across super pods",
        _with(lambda s: [s[1].update(super_pod_id="1"), s[1]["devices"][0].update(device_ip="")], superpod_cluster(2, 2)),
        {"chip": "A3"},
        "server 10.1.0.2 device 0 has no device_ip, which a table spanning several super pods needs",
    ),
    (
        "1.2 without super_pod_id",
        _with(lambda s: s[0].pop("super_pod_id"), superpod_cluster(2, 2)),
        {"version": "1.2"},
        "server 10.1.0.1: version 1.2 needs super_pod_id",
    ),
    ("device_ip not a string", [{"server_id": "a", "devices": [{"device_id": 0, "device_ip": ["x"]}]}], {}, "device_ip must be a string"),
]


@pytest.mark.parametrize("servers, options, message", [case[1:] for case in BAD], ids=[case[0] for case in BAD])
def test_refusals_name_what_to_fix(servers, options, message):
    assert message in refusal(rank_table, servers, **options)


def test_unknown_keyword_is_a_filter_error():
    with pytest.raises(AnsibleFilterError, match="unexpected keyword argument 'np'"):
        rank_table(_two_servers(), np=8)  # the wrong keyword is the point (filters take **kwargs: no type error)


def test_large_cluster_is_built_with_unique_ranks():
    table = rank_table(a2_cluster(64), chip="910B")
    ranks = [int(d["rank_id"]) for s in table["server_list"] for d in s["device"]]
    assert ranks == list(range(64 * 16))
