from __future__ import annotations

import re

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.ascend.cluster.plugins.filter.rank_table import rank_table, servers_from_facts


def host(name, devices, **extra):
    hv = {"inventory_hostname": name, "ansible_facts": {"ascend_npu": {"chip": "910B", "devices": devices}}}
    hv.update(extra)
    return hv


def test_server_id_prefers_explicit_then_ansible_host_then_name():
    out = servers_from_facts(
        [
            host("a", [], ascend_server_id="10.0.0.1", ansible_host="a.example"),
            host("b", [], ansible_host="10.0.0.2"),
            host("c", []),
        ]
    )
    assert [s["server_id"] for s in out] == ["10.0.0.1", "10.0.0.2", "c"]
    assert [s["host"] for s in out] == ["a", "b", "c"]
    assert out[1]["host_ip"] == "10.0.0.2" and "host_ip" not in out[2]


def test_devices_sorted_with_int_ids_and_empty_ip_for_unset():
    out = servers_from_facts(
        [host("a", [{"device_id": "3", "device_ip": "198.19.0.4", "link": "UP"}, {"device_id": 1, "device_ip": None}])]
    )
    assert out[0]["devices"] == [
        {"device_id": 1, "device_ip": ""},
        {"device_id": 3, "device_ip": "198.19.0.4", "link": "UP"},
    ]
    assert out[0]["chip"] == "910B"


@pytest.mark.parametrize(
    "hosts, message",
    [
        ([{"inventory_hostname": "x"}], "host x has no 'ascend_npu' facts (ansible_facts.ascend_npu): run ascend.cluster.hccn_facts"),
        ([host("y", [{"device_ip": "1.2.3.4"}])], "host y: malformed device entry"),
        ([], "got no hosts"),
        ({"a": {}}, "expects a list of host variables"),
        ([host("p", [], ascend_super_device_ids=["0x1"])], "host p: ascend_super_device_ids must map device ids"),
        ([host("q", [{"device_id": 0}], ascend_super_device_ids={"zero": "1"})], "host q: ascend_super_device_ids has a key 'zero'"),
        ([host("r", [{"device_id": 0}], ascend_super_device_ids={0: "1", 9: "2"})], "host r: ascend_super_device_ids names devices [9]"),
    ],
)
def test_bad_input_names_the_host(hosts, message):
    with pytest.raises(AnsibleFilterError, match=re.escape(message)):
        servers_from_facts(hosts)


def test_custom_facts_key():
    facts = {"npu": {"devices": [{"device_id": 0, "device_ip": "198.19.0.1"}]}}
    out = servers_from_facts([{"inventory_hostname": "z", "ansible_facts": facts}], "npu")
    assert out[0]["devices"][0]["device_ip"] == "198.19.0.1"
    assert out[0]["chip"] is None


def test_facts_are_read_from_ansible_facts_only():
    # A top-level ascend_npu is the injected copy of the fact: absent when INJECT_FACTS_AS_VARS is
    # off (ansible-core 2.24's default), deprecated before. The filter must not depend on it.
    injected_only = {"inventory_hostname": "w", "ascend_npu": {"chip": "910B", "devices": [{"device_id": 0}]}}
    with pytest.raises(AnsibleFilterError, match=re.escape("host w has no 'ascend_npu' facts (ansible_facts.ascend_npu)")):
        servers_from_facts([injected_only])
    both = dict(injected_only, ansible_facts={"ascend_npu": {"chip": "A3", "devices": [{"device_id": 5}]}})
    out = servers_from_facts([both])
    assert out[0]["chip"] == "A3" and [d["device_id"] for d in out[0]["devices"]] == [5]


def test_a3_superpod_ids_from_inventory_feed_a_1_2_table():
    devices = [{"device_id": d, "device_ip": f"198.19.{s}.{d + 1}"} for s in (0, 1) for d in (0, 1)]
    hosts = [
        host("a3-0", devices[:2], ansible_host="10.0.0.1", ascend_super_pod_id=0, ascend_super_device_ids={"0": 100, 1: "101"}),
        host("a3-1", devices[2:], ansible_host="10.0.0.2", ascend_super_pod_id="0", ascend_super_device_ids={0: "102", 1: "103"}),
    ]
    out = servers_from_facts(hosts)
    assert [s["super_pod_id"] for s in out] == ["0", "0"]
    assert [d["super_device_id"] for s in out for d in s["devices"]] == ["100", "101", "102", "103"]
    table = rank_table(out, version="1.2")
    assert table["super_pod_list"] == [{"super_pod_id": "0", "server_list": [{"server_id": "10.0.0.1"}, {"server_id": "10.0.0.2"}]}]
    assert [d["super_device_id"] for s in table["server_list"] for d in s["device"]] == ["100", "101", "102", "103"]


def test_without_superpod_ids_a_1_2_table_says_what_is_missing():
    out = servers_from_facts([host("a3-0", [{"device_id": 0, "device_ip": "198.19.0.1"}], ansible_host="10.0.0.1")])
    assert "super_pod_id" not in out[0] and "super_device_id" not in out[0]["devices"][0]
    with pytest.raises(AnsibleFilterError, match="super"):
        rank_table(out, version="1.2")
