"""The cross-server ping mesh: which device pings which (ping_mesh_targets), and how a lost ping is reported."""

from __future__ import annotations

from typing import Any

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.ascend.cluster.plugins.filter.net_health import ping_mesh_targets
from ansible_collections.ascend.cluster.plugins.plugin_utils._net.net_health import health_report
from tests.helpers.devices import device_facts


def dev(device_id: int, server: int, per_device_subnet: bool = True, **changes: Any) -> dict[str, Any]:
    """A healthy device: 198.19.<device>.<server>/24 (one subnet per device), or all in 198.19.0.0/16."""
    if per_device_subnet:
        return {**device_facts(device_id, f"198.19.{device_id}.{server}", "255.255.255.0", f"198.19.{device_id}.254"), **changes}
    return {**device_facts(device_id, f"198.19.{device_id}.{server}", "255.255.0.0", "198.19.0.254"), **changes}


def hosts(servers: int, devices: int = 2, **kwargs: Any) -> list[dict[str, Any]]:
    """hostvars entries (ansible_facts.ascend_npu) of servers s1..sN."""
    return [
        {
            "inventory_hostname": f"s{s}",
            "ansible_facts": {"ascend_npu": {"chip": "910B", "devices": [dev(d, s, **kwargs) for d in range(devices)]}},
        }
        for s in range(1, servers + 1)
    ]


def pairs(targets: list[dict[str, Any]]) -> list[tuple[int, str]]:
    return [(t["device_id"], t["peer"]) for t in targets]


def test_sampled_pings_the_same_device_of_the_next_and_previous_server():
    assert pairs(ping_mesh_targets(hosts(4), "s1", "sampled")) == [
        (0, "s2 device 0"),
        (0, "s4 device 0"),
        (1, "s2 device 1"),
        (1, "s4 device 1"),
    ]
    # with two servers next and previous are one server: pinged once
    assert pairs(ping_mesh_targets(hosts(2), "s2", "sampled")) == [(0, "s1 device 0"), (1, "s1 device 1")]
    assert ping_mesh_targets(hosts(1), "s1", "sampled") == []  # nobody to ping


def test_full_pings_every_device_of_every_other_server_in_the_subnet():
    # one subnet per device: device 0 reaches only the other servers' device 0
    assert pairs(ping_mesh_targets(hosts(3), "s1", "full")) == [
        (0, "s2 device 0"),
        (0, "s3 device 0"),
        (1, "s2 device 1"),
        (1, "s3 device 1"),
    ]
    # one subnet for all devices: every device of the others
    assert len(ping_mesh_targets(hosts(3, per_device_subnet=False), "s1", "full")) == 2 * 4
    target = ping_mesh_targets(hosts(2), "s1", "full")[0]
    assert target == {"device_id": 0, "address": "198.19.0.2", "peer": "s2 device 0"}


def test_devices_without_an_ip_are_left_out_and_none_plans_nothing():
    servers = hosts(2)
    servers[1]["ansible_facts"]["ascend_npu"]["devices"][1]["device_ip"] = ""
    assert pairs(ping_mesh_targets(servers, "s1", "sampled")) == [(0, "s2 device 0")]
    assert ping_mesh_targets(servers, "s1", "none") == []


@pytest.mark.parametrize(
    ("servers", "mode", "message"),
    [
        (hosts(2), "ring", "ping mesh mode 'ring' is unknown: use none, sampled or full"),
        ("s1", "sampled", "must be a list of hosts' variables"),
        ([{"inventory_hostname": "s1"}], "sampled", "s1: no ascend_npu facts"),
    ],
)
def test_bad_input_is_refused_saying_what_to_fix(servers, mode, message):
    with pytest.raises(AnsibleFilterError, match=message):
        ping_mesh_targets(servers, "s1", mode)


def lost(device_id: int, address: str, peer: str, received: int = 0) -> dict[str, Any]:
    return {"device_id": device_id, "address": address, "peer": peer, "ok": False, "sent": 3, "received": received, "loss_pct": 100.0}


def test_a_lost_ping_between_healthy_devices_is_a_path_problem_naming_both_ends():
    servers = hosts(2)
    servers[0]["_ascend_net_health_ping"] = {"results": [lost(1, "198.19.1.2", "s2 device 1")], "lost": 1}
    report = health_report(servers)
    assert report["problems"] == [
        "s1 device 1 -> s2 device 1 (198.19.1.2): 0/3 pings answered - check the cables, switch ports and VLAN between them"
        " (the device IPs answer, the path does not)"
    ]
    assert report["bad"] == [{"server": "s1", "device": 1, "status": "ping lost"}]
    assert [r["status"] for r in report["rows"]] == ["ok", "ping lost", "ok", "ok"]


def test_a_lost_ping_to_a_broken_device_is_a_symptom_of_that_device():
    servers = hosts(2)
    servers[1]["ansible_facts"]["ascend_npu"]["devices"][1].update(link="DOWN", net_health="Fault")
    servers[0]["_ascend_net_health_ping"] = {"results": [lost(1, "198.19.1.2", "s2 device 1")], "lost": 1}
    problems = health_report(servers)["problems"]
    assert len(problems) == 1 and problems[0].startswith("s2 device 1: link DOWN"), problems


def test_a_skipped_ping_task_adds_nothing():
    servers = hosts(2)
    servers[0]["_ascend_net_health_ping"] = {"skipped": True}
    assert health_report(servers)["ok"] is True
