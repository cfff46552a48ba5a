"""Filter ascend.cluster.missing_device_ips: every device without an IP, and whether its table needs it."""

from __future__ import annotations

import re

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.ascend.cluster.plugins.filter.rank_table import FilterModule, missing_device_ips, rank_table
from tests.helpers.clusters import a2_cluster, server, superpod_cluster


def test_filter_is_registered_under_its_name():
    assert FilterModule().filters()["missing_device_ips"] is missing_device_ips


def test_every_ip_present_needs_nothing():
    assert missing_device_ips(a2_cluster(2, 8)) == {"required": True, "device_count": 0, "servers": []}


def test_two_servers_name_every_device_with_host_and_server_id():
    servers = a2_cluster(3, 8)
    servers[0]["host"] = "npu-a"
    for d in (0, 1, 2, 3, 6):
        servers[0]["devices"][d]["device_ip"] = ""
    servers[2]["devices"][7]["device_ip"] = None  # hccn_facts may give None for "no address"
    assert missing_device_ips(servers, chip="910B") == {
        "required": True,
        "device_count": 6,
        "servers": [
            {"server_id": "10.0.0.1", "host": "npu-a", "device_ids": [0, 1, 2, 3, 6], "label": "npu-a (10.0.0.1) devices 0-3, 6"},
            {"server_id": "10.0.2.1", "host": None, "device_ids": [7], "label": "server 10.0.2.1 device 7"},
        ],
    }


def test_one_server_does_not_need_them():
    found = missing_device_ips([server("10.0.0.1", {0: "", 1: "192.168.0.2"}, host="npu-a")])
    assert found == {
        "required": False,
        "device_count": 1,
        "servers": [{"server_id": "10.0.0.1", "host": "npu-a", "device_ids": [0], "label": "npu-a (10.0.0.1) device 0"}],
    }


@pytest.mark.parametrize("pods, required", [(["0", "0"], False), (["0", "1"], True)], ids=["one super pod", "two super pods"])
def test_version_1_2_needs_them_between_super_pods_only(pods, required):
    servers = superpod_cluster(2, 2)
    for entry, pod in zip(servers, pods):
        entry["super_pod_id"] = pod
    servers[1]["devices"][0]["device_ip"] = ""
    assert missing_device_ips(servers, chip="A3")["required"] is required


@pytest.mark.parametrize("required", [True, False], ids=["two servers", "one server"])
def test_it_agrees_with_the_builder(required):
    servers = a2_cluster(2 if required else 1, 8)
    servers[-1]["devices"][3]["device_ip"] = ""
    assert missing_device_ips(servers)["required"] is required
    if required:
        with pytest.raises(AnsibleFilterError, match=re.escape("server 10.0.1.1 device 3 has no device_ip")):
            rank_table(servers)
    else:
        rank_table(servers)


def test_unreadable_input_is_a_filter_error():
    with pytest.raises(AnsibleFilterError, match=r"^missing_device_ips: .*device_id 8 is out of range for 910A"):
        missing_device_ips([server("10.0.0.1", {8: ""})], chip="910A")
