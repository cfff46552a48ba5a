"""One set of rules on usable addresses for the controller's plan check and the host check.

``module_utils/_hccn/ip_rules.unicast_problem`` decides for both ``plugin_utils/_net/ip_plan`` (netaddr, on
the controller) and ``_hccn.ip_rules.check_device`` (ipaddress, on the target). The two used to carry
their own copies, which had drifted: 255.255.255.255 as a device address was "the broadcast
address" on the controller but "in the reserved range 240.0.0.0/4" on the host.
"""

from __future__ import annotations

import ipaddress

import netaddr
import pytest

from ansible_collections.ascend.cluster.plugins.module_utils._hccn import ip_rules as _ip_check
from ansible_collections.ascend.cluster.plugins.plugin_utils._errors import ClusterSpecError
from ansible_collections.ascend.cluster.plugins.plugin_utils._net import ip_plan as _ip_plan

ZERO = "is in 0.0.0.0/8 (not a usable address)"
LOOPBACK = "is a loopback address"
BROADCAST = "is the broadcast address"
MULTICAST = "is a multicast address"
RESERVED = "is in the reserved range 240.0.0.0/4"

CASES = [
    ("0.0.0.1", ZERO),
    ("0.255.255.255", ZERO),
    ("1.0.0.1", None),
    ("126.255.255.254", None),
    ("127.0.0.1", LOOPBACK),
    ("127.255.255.254", LOOPBACK),
    ("128.0.0.1", None),
    ("198.18.0.1", None),
    ("223.255.255.254", None),
    ("224.0.0.1", MULTICAST),
    ("239.255.255.255", MULTICAST),
    ("240.0.0.1", RESERVED),
    ("255.255.255.254", RESERVED),
    ("255.255.255.255", BROADCAST),  # the case the two copies disagreed on
]


@pytest.mark.parametrize("text, reason", CASES)
def test_every_form_of_an_address_gets_the_same_answer(text, reason):
    forms = [text, ipaddress.IPv4Address(text), netaddr.IPAddress(text), int(ipaddress.IPv4Address(text))]
    assert [_ip_check.unicast_problem(form) for form in forms] == [reason] * 4


def _host_problems(entry):
    return _ip_check.check_device(dict(entry, device_id=0))[1]


def _plan_problems(entry):
    try:
        _ip_plan.validate_plan({"server0": [dict(entry, device_id=0)]})
    except ClusterSpecError as exc:
        return str(exc)
    return ""


@pytest.mark.parametrize("text, reason", CASES)
def test_device_address_same_verdict_on_controller_and_host(text, reason):
    entry = {"address": text, "netmask": "255.255.255.0"}
    host, plan = _host_problems(entry), _plan_problems(entry)
    if reason is None:
        assert (host, plan) == ([], "")
    else:
        assert f"device 0: address {text} {reason}" in host
        assert f"server0 device 0: address {text} {reason}" in plan


@pytest.mark.parametrize("field", ["gateway", "netdetect"])
@pytest.mark.parametrize("text, reason", [c for c in CASES if c[1] is not None])
def test_target_same_verdict_on_controller_and_host(field, text, reason):
    entry = {"address": "198.18.0.10", "netmask": "255.255.255.0", field: text}
    host, plan = _host_problems(entry), _plan_problems(entry)
    assert f"device 0: {field} {text} {reason}" in host
    assert f"server0 device 0: {field} {text} {reason}" in plan


@pytest.mark.parametrize("field", ["gateway", "netdetect"])
def test_usable_targets_pass_both(field):
    entry = {"address": "198.18.0.10", "netmask": "255.255.255.0", field: "198.18.0.1"}
    assert _host_problems(entry) == []
    assert _plan_problems(entry) == ""


@pytest.mark.parametrize(
    "entry",
    [
        {"address": "192.168.1.20", "netmask": "24"},  # the device's vNIC subnet
        {"address": "198.18.0.10", "netmask": "31"},  # too narrow
        {"address": "198.18.0.0", "netmask": "24"},  # the network address
        {"address": "198.18.0.10", "netmask": "24", "gateway": "198.18.1.1"},  # outside the subnet
        {"address": "198.18.0.10", "netmask": "24", "gateway": "198.18.0.10"},  # its own address
        {"address": "198.18.0.10", "netmask": "24", "netdetect": "0.0.0.0"},
        {"address": "198.18.0.10", "netmask": "24", "gateway": "198.18.0.255"},  # the broadcast address
        {"address": "198.18.0.300", "netmask": "255.0.255.0"},  # neither can be read: both said
        {"address": "198.18.0.10", "netmask": "0.0.0.255"},  # a host mask is not a netmask
    ],
)
def test_every_device_rule_reads_the_same_on_controller_and_host(entry):
    """One owner (_ip_check.check_device): each problem the host check finds, the plan check finds in the same words."""
    host, plan = _host_problems(entry), _plan_problems(entry)
    assert host
    for problem in host:
        assert "server0 " + problem in plan


@pytest.mark.parametrize("text, dotted", [("24", "255.255.255.0"), ("/30", "255.255.255.252"), (" 255.255.0.0 ", "255.255.0.0")])
def test_one_netmask_reader(text, dotted):
    assert _ip_check.normalize_netmask(text) == dotted
    assert _ip_plan._netmask(text) == dotted


@pytest.mark.parametrize("text", ["0.0.0.255", "33", "255.0.255.0", "", "２４"])
def test_what_is_no_netmask(text):
    with pytest.raises(ValueError, match="is not a netmask"):
        _ip_check.normalize_netmask(text)
    assert _ip_plan._netmask(text) is None


@pytest.mark.parametrize("text, prefix", [("255.255.255.0", 24), ("/16", 16), ("30", 30)])
def test_the_prefix_of_a_netmask_comes_from_the_same_reader(text, prefix):
    assert _ip_check.netmask_prefix(text) == prefix
    with pytest.raises(ValueError, match="is not a netmask"):
        _ip_check.netmask_prefix("0.0.0.255")
