from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.ascend.cluster.plugins.filter.servers_from_facts import servers_from_facts


def host(name, devices, **extra):
    hv = {"inventory_hostname": name, "ascend_npu": {"chip": "910B", "devices": devices}}
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
        ([{"inventory_hostname": "x"}], "host x has no 'ascend_npu' facts: run ascend.cluster.hccn_facts"),
        ([host("y", [{"device_ip": "1.2.3.4"}])], "host y: malformed device entry"),
        ([], "got no hosts"),
        ({"a": {}}, "expects a list of host variables"),
    ],
)
def test_bad_input_names_the_host(hosts, message):
    with pytest.raises(AnsibleFilterError, match=message.replace("(", r"\(").replace(".", r"\.")):
        servers_from_facts(hosts)


def test_custom_facts_key():
    out = servers_from_facts([{"inventory_hostname": "z", "npu": {"devices": [{"device_id": 0, "device_ip": "198.19.0.1"}]}}], "npu")
    assert out[0]["devices"][0]["device_ip"] == "198.19.0.1"
    assert out[0]["chip"] is None
