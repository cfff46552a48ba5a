"""HCCL_IF_IP / HCCL_SOCKET_IFNAME from the inventory's NIC choice (module_utils/_host/nic.py)."""

from __future__ import annotations

import pytest

from ansible_collections.ascend.cluster.plugins.module_utils._host import nic

NICS = {"lo": "127.0.0.1", "eth0": "10.0.0.11", "bond0": None}


def resolve(choice, host_ip, local=("10.0.0.11",)):
    return nic.resolve(choice, host_ip, names=lambda: list(NICS), address_of=NICS.get, is_local=lambda ip: ip in local)


@pytest.mark.parametrize(
    ("choice", "host_ip", "expected"),
    [
        # a chosen NIC gives HCCL_IF_IP its address
        ("eth0", "", {"host_ip": "10.0.0.11", "nic": "eth0", "problem": None}),
        ("eth0", "10.0.0.11", {"host_ip": "10.0.0.11", "nic": "eth0", "problem": None}),
        # no NIC chosen: the address must be this server's
        ("", "10.0.0.11", {"host_ip": "10.0.0.11", "nic": "", "problem": None}),
        ("", "", {"host_ip": "", "nic": "", "problem": None}),
        ("", "node1.example", {"host_ip": "node1.example", "nic": "", "problem": None}),  # not an address: not checked here
    ],
)
def test_a_usable_choice(choice, host_ip, expected):
    assert resolve(choice, host_ip) == expected


@pytest.mark.parametrize(
    ("choice", "host_ip", "problem"),
    [
        ("ib0", "", "no NIC ib0 (its NICs: lo, eth0, bond0); fix ascend_launch_nic"),
        ("bond0", "", "NIC bond0 has no IPv4 address; give it one, or choose another ascend_launch_nic"),
        ("eth0", "10.0.0.99", "ascend_launch_host_ip 10.0.0.99 is not the address of NIC eth0 (10.0.0.11); unset one of the two"),
        (
            "",
            "203.0.113.7",
            "HCCL_IF_IP 203.0.113.7 (the rank table's server_id, or ascend_launch_host_ip) is not an address of this server",
        ),
    ],
)
def test_a_wrong_choice_is_named_with_the_fix(choice, host_ip, problem):
    assert resolve(choice, host_ip)["problem"].startswith(problem)


def test_this_machines_loopback_is_seen_as_it_is():
    assert "lo" in nic.nic_names()
    assert nic.nic_address("lo") == "127.0.0.1"
    assert nic.nic_address("no-such-nic0") is None
    assert nic.is_local_address("127.0.0.1") is True
    assert nic.is_local_address("198.18.255.254") is False  # the test range: only inside the beds' namespaces
