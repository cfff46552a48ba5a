"""plugin_utils._net.ip_plan directly: what the filters do not show (missing netaddr, server names)."""

from __future__ import annotations

import pytest

from ansible_collections.ascend.cluster.plugins.plugin_utils._errors import ClusterSpecError
from ansible_collections.ascend.cluster.plugins.plugin_utils._net import ip_plan as _ip_plan


def test_missing_netaddr_gives_the_install_hint(monkeypatch):
    monkeypatch.setattr(_ip_plan, "netaddr", None)
    with pytest.raises(ClusterSpecError, match="need the netaddr Python library on the controller: pip install netaddr"):
        _ip_plan.build_plan(["s"], "amp", ["198.18.0.0/24"])


def test_checking_a_plan_needs_no_netaddr(monkeypatch):
    """The per-device rules are module_utils/_hccn/ip_rules's (standard library), so a plan is checked without netaddr."""
    monkeypatch.setattr(_ip_plan, "netaddr", None)
    plan = {"s": [{"device_id": 0, "address": "198.18.0.10", "netmask": "24"}]}
    assert _ip_plan.validate_plan(plan) == {
        "s": [{"device_id": 0, "address": "198.18.0.10", "netmask": "255.255.255.0", "gateway": "", "netdetect": ""}]
    }
    with pytest.raises(ClusterSpecError, match=r"address 192\.168\.1\.10 is in 192\.168\.1\.0/24, reserved"):
        _ip_plan.validate_plan({"s": [{"device_id": 0, "address": "192.168.1.10", "netmask": "24"}]})


@pytest.mark.parametrize(
    "servers, names",
    [
        (["a", "b"], ["a", "b"]),
        ([{"host": "a", "devices": []}, {"name": "b"}, {"server_id": "10.0.0.3"}], ["a", "b", "10.0.0.3"]),
    ],
)
def test_server_names(servers, names):
    assert _ip_plan.server_names(servers) == names


@pytest.mark.parametrize(
    "servers, message",
    [
        ("a", "must be a list of server names"),
        ([{"devices": []}], "server 0: {'devices': []} is not a host name"),
        ([3], "server 0: 3 is not a host name"),
    ],
)
def test_bad_server_lists(servers, message):
    with pytest.raises(ClusterSpecError, match=message.replace("[", r"\[").replace("]", r"\]")):
        _ip_plan.server_names(servers)


def dev(device, address, gateway="", netdetect=""):
    return {"device_id": device, "address": address, "netmask": "255.255.255.0", "gateway": gateway, "netdetect": netdetect}


def problems_of(plan, **kwargs):
    with pytest.raises(ClusterSpecError) as info:
        _ip_plan.validate_plan(plan, **kwargs)
    return str(info.value)


def test_a_netdetect_outside_the_subnet_without_a_gateway_is_refused():
    """Issue 13 item 6: hccn_tool accepts it and net_health fails later; the plan check refuses it first."""
    msg = problems_of({"s0": [dev(0, "198.18.0.10", netdetect="198.19.0.1")]})
    assert msg == (
        "the device IP plan has 1 problem(s), nothing was changed: s0 device 0: netdetect 198.19.0.1 is outside the "
        "device subnet 198.18.0.0/24 and the plan gives the device no gateway to reach it; plan a gateway in "
        "198.18.0.0/24, or a netdetect target inside it"
    )


@pytest.mark.parametrize(
    "entry",
    [
        dev(0, "198.18.0.10", gateway="198.18.0.1", netdetect="198.19.0.1"),  # routed through the gateway
        dev(0, "198.18.0.10", netdetect="198.18.0.20"),  # inside the subnet
        dev(0, "198.18.0.10"),
    ],
)
def test_netdetect_targets_the_device_can_reach_pass(entry):
    assert _ip_plan.validate_plan({"s0": [entry]})["s0"][0]["netdetect"] == entry["netdetect"]


def test_a_planned_netdetect_the_health_stage_would_replace_is_refused():
    """Issue 13 item 6: under net_health netdetect=peer (or gateway) the plan's own target would be replaced silently."""
    plan = {
        "s0": [dev(0, "198.18.0.10", netdetect="198.18.0.99"), dev(1, "198.18.0.11", netdetect="198.18.0.21")],
        "s1": [dev(0, "198.18.0.20"), dev(1, "198.18.0.21")],
    }
    msg = problems_of(plan, replaced_netdetect="peer", servers=["s0", "s1"])
    assert "1 problem(s)" in msg  # device 1 already probes its peer (s1 device 1): nothing is replaced
    assert (
        "s0 device 0: the plan's netdetect 198.18.0.99 would be replaced by 198.18.0.20 (net_health netdetect=peer); "
        "drop netdetect from the plan, or keep the plan's targets with ascend_net_health_netdetect=keep"
    ) in msg
    # gateway mode: a target other than the planned gateway (or, without one, the device's) is replaced too
    gateway = {"s0": [dev(0, "198.18.0.10", gateway="198.18.0.1", netdetect="198.18.0.1"), dev(1, "198.18.0.11", netdetect="198.18.0.1")]}
    assert "s0 device 1: the plan's netdetect 198.18.0.1 would be replaced by the device's gateway" in problems_of(
        gateway, replaced_netdetect="gateway"
    )
    # no later stage (net_health keep, or a play of your own): the plan's targets stand
    assert _ip_plan.validate_plan(plan)["s0"][0]["netdetect"] == "198.18.0.99"
    with pytest.raises(ClusterSpecError, match="replaced_netdetect 'keep' is unknown"):
        _ip_plan.validate_plan(plan, replaced_netdetect="keep")


def hostvars_of(host, devices):
    return {"inventory_hostname": host, "ansible_facts": {"ascend_npu": {"devices": [{"device_id": d} for d in devices]}}}


def test_a_device_a_server_does_not_have_is_a_problem_of_the_whole_plan():
    """Issue 25 item 2: s1 has devices 0-7 and its plan names device 9; refused for the cluster, not by s1 alone after s0 changed."""
    plan = {"s0": [dev(0, "198.18.0.10")], "s1": [dev(0, "198.18.0.20"), dev(9, "198.18.0.29"), dev(12, "198.18.0.32")]}
    facts = [hostvars_of("s0", range(8)), hostvars_of("s1", range(8)), {"inventory_hostname": "s2"}]  # s2: not read (left out)
    assert problems_of(plan, facts=facts) == (
        "the device IP plan has 1 problem(s), nothing was changed: s1: the plan sets devices 9, 12, which s1 does not have "
        "(its devices are 0-7, as hccn_facts read them); plan only the devices it has (its ascend_device_ips, or "
        "ascend_device_ip_device_count)"
    )
    # the same facts as host -> ascend_npu; a server whose facts are not known is not checked so
    assert "s1: the plan sets devices 9, 12" in problems_of(plan, facts={"s1": {"devices": [{"device_id": d} for d in (0, 1, 2, 3, 6)]}})
    assert "its devices are 0-3, 6," in problems_of(plan, facts={"s1": {"devices": [{"device_id": d} for d in (0, 1, 2, 3, 6)]}})
    assert _ip_plan.validate_plan(plan, facts=[hostvars_of("s0", range(8))])["s1"][1]["device_id"] == 9
    assert _ip_plan.validate_plan(plan)["s1"][2]["device_id"] == 12  # no facts given: not checked


def test_facts_that_are_not_hosts_variables_are_refused():
    with pytest.raises(ClusterSpecError, match="facts: 'h1' is not a host's variables"):
        _ip_plan.validate_plan({"s0": [dev(0, "198.18.0.10")]}, facts=["h1"])
