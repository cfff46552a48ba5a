"""Filters device_ip_plan and validate_ip_plan: seed 004, AMP, and every bad plan with its message."""

from __future__ import annotations

import copy

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.ascend.cluster.plugins.filter.device_ip import device_ip_plan, validate_ip_plan
from tests.helpers.filters import refusal

SEED_NETS = ["192.168.100.0/24", "192.168.101.0/24", "192.168.102.0/24", "192.168.103.0/24"]
MASK = "255.255.255.0"


def seed004_commands(plan, host):
    return ["hccn_tool -i %d -ip -s address %s netmask %s" % (e["device_id"], e["address"], e["netmask"]) for e in plan[host]]


def test_seed_004_is_reproduced_exactly():
    plan = device_ip_plan(["server0", "server1"], "smp", SEED_NETS)
    # The commands of seed 004, "配置device IP", AI Server0 and AI Server1, in the seed's order.
    assert seed004_commands(plan, "server0") == [
        "hccn_tool -i 0 -ip -s address 192.168.100.101 netmask 255.255.255.0",
        "hccn_tool -i 1 -ip -s address 192.168.101.101 netmask 255.255.255.0",
        "hccn_tool -i 2 -ip -s address 192.168.102.101 netmask 255.255.255.0",
        "hccn_tool -i 3 -ip -s address 192.168.103.101 netmask 255.255.255.0",
        "hccn_tool -i 4 -ip -s address 192.168.100.100 netmask 255.255.255.0",
        "hccn_tool -i 5 -ip -s address 192.168.101.100 netmask 255.255.255.0",
        "hccn_tool -i 6 -ip -s address 192.168.102.100 netmask 255.255.255.0",
        "hccn_tool -i 7 -ip -s address 192.168.103.100 netmask 255.255.255.0",
    ]
    assert seed004_commands(plan, "server1") == [
        "hccn_tool -i 0 -ip -s address 192.168.100.111 netmask 255.255.255.0",
        "hccn_tool -i 1 -ip -s address 192.168.101.111 netmask 255.255.255.0",
        "hccn_tool -i 2 -ip -s address 192.168.102.111 netmask 255.255.255.0",
        "hccn_tool -i 3 -ip -s address 192.168.103.111 netmask 255.255.255.0",
        "hccn_tool -i 4 -ip -s address 192.168.100.110 netmask 255.255.255.0",
        "hccn_tool -i 5 -ip -s address 192.168.101.110 netmask 255.255.255.0",
        "hccn_tool -i 6 -ip -s address 192.168.102.110 netmask 255.255.255.0",
        "hccn_tool -i 7 -ip -s address 192.168.103.110 netmask 255.255.255.0",
    ]
    assert all(e["gateway"] == "" and e["netdetect"] == "" for e in plan["server0"] + plan["server1"])
    assert list(plan) == ["server0", "server1"]


def test_smp_gateway_and_peer_netdetect():
    plan = device_ip_plan([{"host": "a"}, {"host": "b"}, {"host": "c"}], "smp", SEED_NETS, gateway_host=1, netdetect="peer")
    assert plan["a"][1]["gateway"] == "192.168.101.1"
    assert plan["a"][1]["netdetect"] == plan["b"][1]["address"] == "192.168.101.111"
    assert plan["c"][5]["netdetect"] == plan["a"][5]["address"] == "192.168.101.100"


def test_amp_consecutive_addresses_in_one_subnet():
    plan = device_ip_plan(["n1", "n2"], "amp", "198.18.0.0/22", first_host=11, gateway_host=1)
    assert [e["address"] for e in plan["n1"]] == ["198.18.0.%d" % n for n in range(11, 19)]
    assert [e["address"] for e in plan["n2"]] == ["198.18.0.%d" % n for n in range(19, 27)]
    assert {e["netmask"] for e in plan["n1"]} == {"255.255.252.0"}
    assert {(e["gateway"], e["netdetect"]) for e in plan["n2"]} == {("198.18.0.1", "198.18.0.1")}


def test_amp_sixteen_devices_and_last_host_gateway():
    plan = device_ip_plan(["a3"], "amp", ["198.18.4.0/24"], device_count=16, first_host=1, gateway_host=-2)
    assert [e["device_id"] for e in plan["a3"]] == list(range(16))
    assert plan["a3"][15]["address"] == "198.18.4.16" and plan["a3"][0]["gateway"] == "198.18.4.254"


BAD_BUILDS = [
    ((["s"], "smp", SEED_NETS[:3]), {}, "it needs 4 networks"),
    ((["s"], "amp", SEED_NETS), {}, "give one network, got 4"),
    ((["s"], "ring", SEED_NETS), {}, "layout 'ring' is unknown"),
    ((["s", "s"], "smp", SEED_NETS), {}, "servers listed more than once: s"),
    (([], "smp", SEED_NETS), {}, "no server given"),
    ((["s"], "smp", SEED_NETS), {"device_count": 16}, "device_count must be 8"),
    ((["s"], "smp", ["192.168.100.0"] + SEED_NETS[1:]), {}, "has no prefix length"),
    ((["s"], "smp", ["192.168.100.0/33"] + SEED_NETS[1:]), {}, "is not an IPv4 network"),
    ((["s", "t"], "smp", SEED_NETS), {"first_host": 250}, "host number 261 does not fit"),
    (
        (["s"], "amp", ["198.18.0.0/24"]),
        {"netdetect": "gateway"},
        "netdetect=gateway (role: ascend_device_ip_netdetect=gateway) needs gateway_host",
    ),
    ((["s"], "amp", ["198.18.0.0/24"]), {"netdetect": "peer"}, "needs at least two servers"),
    ((["s"], "amp", ["198.18.0.0/24"]), {"gateway_host": 300}, "gateway_host 300 is not a host of 198.18.0.0/24"),
    ((["s"], "amp", ["198.18.0.0/24"]), {"gateway_host": 101}, "gateway 198.18.0.101 is the address of s device 1"),
    ((["s"], "amp", ["192.168.1.0/24"]), {}, "reserved for the device's internal vNIC"),
]


@pytest.mark.parametrize("args, kwargs, message", BAD_BUILDS, ids=[case[-1] for case in BAD_BUILDS])
def test_bad_plan_parameters(args, kwargs, message):
    assert message in refusal(device_ip_plan, *args, **kwargs)


def seed_plan():
    return device_ip_plan(["server0", "server1"], "smp", SEED_NETS)


def with_change(host, device, **values):
    plan = copy.deepcopy(seed_plan())
    plan[host][device].update(values)
    return plan


BAD_PLANS = [
    (
        with_change("server1", 6, address="192.168.102.100"),
        {},
        "address 192.168.102.100 is planned 2 times: server0 device 6, server1 device 6",
    ),
    (
        with_change("server0", 0, gateway="192.168.101.1"),
        {},
        "server0 device 0: gateway 192.168.101.1 is outside the device subnet 192.168.100.0/24",
    ),
    (
        with_change("server0", 2, address="192.168.1.7", netmask="24"),
        {"layout": None},
        "server0 device 2: address 192.168.1.7 is in 192.168.1.0/24, reserved",
    ),
    (
        with_change("server0", 3, address="192.168.103.255"),
        {},
        "server0 device 3: address 192.168.103.255 is the broadcast address of 192.168.103.0/24",
    ),
    (
        with_change("server0", 3, address="192.168.103.0"),
        {},
        "server0 device 3: address 192.168.103.0 is the network address of 192.168.103.0/24",
    ),
    (with_change("server0", 0, netdetect="192.168.100.255"), {}, "netdetect 192.168.100.255 is the broadcast address of 192.168.100.0/24"),
    (with_change("server0", 0, netdetect="255.255.255.255"), {}, "netdetect 255.255.255.255 is the broadcast address"),
    (with_change("server0", 0, netdetect="192.168.100.101"), {}, "netdetect 192.168.100.101 is the device's own address"),
    (with_change("server0", 0, gateway="192.168.100.100"), {}, "gateway 192.168.100.100 is the address of server0 device 4"),
    (with_change("server0", 0, gateway="0.0.0.0"), {}, "gateway 0.0.0.0 is not an address"),
    (with_change("server0", 1, address="192.168.101.300"), {}, "address '192.168.101.300' is not an IPv4 address"),
    (with_change("server0", 1, netmask="255.0.255.0"), {}, "netmask '255.0.255.0' is not a netmask"),
    (with_change("server0", 1, netmask="31"), {}, "(/31) leaves no room for a device and a gateway"),
    (with_change("server0", 1, address="127.0.0.2", netmask="8"), {}, "address 127.0.0.2 is a loopback address"),
    (with_change("server0", 1, device_id=0), {}, "server0 device 0: listed more than once"),
    (with_change("server0", 7, device_id=9), {"chip": "910A"}, "device_id 9 is out of range for 910A (0-7)"),
    (with_change("server0", 7, device_id="x"), {}, "device_id 'x' is not a whole number"),
    (
        with_change("server0", 4, address="192.168.101.100"),
        {"layout": "smp"},
        "server0: smp layout: devices 0 and 4 must share a subnet, got 192.168.100.0/24 and 192.168.101.0/24",
    ),
    (
        with_change("server0", 1, address="192.168.100.102"),
        {"layout": "smp"},
        "server0: smp layout: devices 0, 1 share 192.168.100.0/24; devices 0-3 must each be in their own subnet",
    ),
    ({"server0": "192.168.100.101"}, {}, "server0: the plan entry must be a list of devices"),
    ({"server0": [["0", "192.168.100.101"]]}, {}, "server0 entry 0: ['0', '192.168.100.101'] is not a dict"),
    (["server0"], {}, "the plan must be a dict"),
    (seed_plan(), {"layout": "ring"}, "layout 'ring' is unknown"),
    (seed_plan(), {"chip": "Z9"}, "unknown chip 'Z9'"),
]


@pytest.mark.parametrize("plan, kwargs, message", BAD_PLANS, ids=[case[-1][:60] for case in BAD_PLANS])
def test_bad_plan_is_refused_with_its_message(plan, kwargs, message):
    assert message in refusal(validate_ip_plan, plan, **kwargs)


def test_every_problem_is_listed():
    plan = with_change("server0", 0, gateway="192.168.101.1")
    plan["server1"][0]["address"] = "192.168.100.100"  # duplicates server0 device 4
    plan["server1"][1]["address"] = "192.168.1.9"
    with pytest.raises(AnsibleFilterError) as info:
        validate_ip_plan(plan, layout="smp")
    text = str(info.value)
    assert "has 4 problem(s)" in text
    assert "server1 device 1: address 192.168.1.9" in text and "server1: smp layout: devices 1 and 5" in text


def test_valid_plan_is_returned_normalized():
    raw = {
        "h": [
            {"device_id": "1", "address": " 198.18.0.11", "netmask": 24},
            {"device_id": 0, "address": "198.18.0.10", "netmask": "255.255.255.0", "gateway": "198.18.0.1"},
        ]
    }
    assert validate_ip_plan(raw, chip="910B") == {
        "h": [
            {"device_id": 0, "address": "198.18.0.10", "netmask": MASK, "gateway": "198.18.0.1", "netdetect": ""},
            {"device_id": 1, "address": "198.18.0.11", "netmask": MASK, "gateway": "", "netdetect": ""},
        ]
    }


def test_seed_plan_passes_the_smp_check():
    assert validate_ip_plan(seed_plan(), chip="910A", layout="smp") == seed_plan()
