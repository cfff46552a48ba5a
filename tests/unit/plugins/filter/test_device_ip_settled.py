"""Filter ascend.cluster.device_ip_settled: a host's plan against its facts of this run. True only
when hccn_config would change nothing; anything unsure is False (the module then decides)."""

from __future__ import annotations

import pytest

from ansible_collections.ascend.cluster.plugins.filter.device_ip import device_ip_settled

PLAN = [
    {"device_id": 0, "address": "198.19.0.11", "netmask": "255.255.255.0", "gateway": "198.19.0.1", "netdetect": ""},
    {"device_id": 1, "address": "198.19.0.12", "netmask": "255.255.255.0", "gateway": "198.19.0.1", "netdetect": ""},
]


def device(device_id: int, **changes):
    """Device ``device_id`` as hccn_facts reports it once the plan is set (netdetect probing a peer, not planned)."""
    entry = {
        "device_id": device_id,
        "device_ip": f"198.19.0.{11 + device_id}",
        "netmask": "255.255.255.0",
        "gateway": "198.19.0.1",
        "netdetect": "198.19.0.19",
        "error": None,
        "stale_conf": False,
        "stale_keys": [],
    }
    entry.update(changes)
    return entry


def facts(*devices, hccn_conf="/etc/hccn.conf"):
    return {"hccn_conf": hccn_conf, "devices": list(devices) or [device(0), device(1)]}


def test_facts_that_show_the_plan_are_settled():
    assert device_ip_settled(PLAN, facts(), "/etc/hccn.conf") is True
    # a netmask given as a prefix length, and a netdetect the plan leaves alone, are still the plan
    assert device_ip_settled([dict(PLAN[0], netmask="24"), PLAN[1]], facts()) is True
    # a device the plan does not list is not compared
    assert device_ip_settled(PLAN, facts(device(0), device(1), device(2, device_ip=""))) is True


@pytest.mark.parametrize(
    ("plan", "host_facts", "hccn_conf"),
    [
        (PLAN, facts(device(0), device(1, device_ip="198.19.0.99")), ""),
        (PLAN, facts(device(0), device(1, device_ip="")), ""),
        (PLAN, facts(device(0), device(1, netmask="255.255.0.0")), ""),
        (PLAN, facts(device(0), device(1, gateway="")), ""),
        ([dict(PLAN[0], netdetect="198.19.0.1"), PLAN[1]], facts(), ""),
        (PLAN, facts(device(0)), ""),
        (PLAN, facts(device(0), device(1, device_ip=None, error="Command execute failed!")), ""),
        (PLAN, facts(device(0), device(1, stale_conf=True, stale_keys=["address"])), ""),
        (PLAN, facts(), "/opt/hccn.conf"),
        (PLAN, {}, ""),
        (PLAN, None, ""),
        ([], facts(), ""),
        ([dict(PLAN[0], netmask="255.0.255.0"), PLAN[1]], facts(device(0, netmask="255.0.255.0"), device(1)), ""),
    ],
    ids=[
        "another address",
        "no address yet",
        "another netmask",
        "gateway missing",
        "planned netdetect differs",
        "a planned device missing",
        "a device unread",
        "stale hccn.conf",
        "facts from another hccn.conf",
        "no facts",
        "facts not a dict",
        "empty plan",
        "not a netmask",
    ],
)
def test_anything_that_differs_or_is_unsure_is_not_settled(plan, host_facts, hccn_conf):
    assert device_ip_settled(plan, host_facts, hccn_conf) is False
