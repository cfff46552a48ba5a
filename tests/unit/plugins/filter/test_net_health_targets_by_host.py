"""Filter ascend.cluster.net_health_targets_by_host: every server's netdetect targets in one pass
(the net_health role's run_once task), the ring under peer, and its refusals."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.ascend.cluster.plugins.filter.net_health import net_health_targets_by_host


def dev(device_id: int, server: int, **changes):
    """Device ``device_id`` of server ``server`` in 198.19.0.0/24 with the gateway .254."""
    entry = {
        "device_id": device_id,
        "device_ip": f"198.19.0.{server * 10 + device_id}",
        "netmask": "255.255.255.0",
        "gateway": "198.19.0.254",
    }
    entry.update(changes)
    return entry


def host(name: str, devices: list) -> dict:
    """One host's variables as hostvars hands them over (facts under ansible_facts only)."""
    return {"inventory_hostname": name, "ansible_facts": {"ascend_npu": {"chip": "910B", "devices": devices}}}


def targets(by_host: dict) -> dict:
    return {name: [(t["device_id"], t["netdetect"]) for t in entries] for name, entries in by_host.items()}


def test_peer_is_a_ring_in_play_order():
    servers = [host("h1", [dev(0, 1), dev(1, 1)]), host("h2", [dev(0, 2), dev(1, 2)]), host("h3", [dev(0, 3), dev(1, 3)])]
    assert targets(net_health_targets_by_host(servers, "peer")) == {
        "h1": [(0, "198.19.0.20"), (1, "198.19.0.21")],
        "h2": [(0, "198.19.0.30"), (1, "198.19.0.31")],
        "h3": [(0, "198.19.0.10"), (1, "198.19.0.11")],  # the last server probes the first
    }


def test_entries_keep_each_devices_own_address_and_netmask():
    out = net_health_targets_by_host([host("h1", [dev(0, 1)]), host("h2", [dev(0, 2)])], "gateway")
    assert out == {
        "h1": [{"device_id": 0, "address": "198.19.0.10", "netmask": "255.255.255.0", "netdetect": "198.19.0.254"}],
        "h2": [{"device_id": 0, "address": "198.19.0.20", "netmask": "255.255.255.0", "netdetect": "198.19.0.254"}],
    }


def test_devices_without_an_ip_or_a_target_are_left_out_and_a_host_may_have_none():
    servers = [
        host("h1", [dev(0, 1), dev(1, 1, device_ip=None, netmask=None)]),  # device 1 has no IP: no entry, and no peer for h2's device 1
        host("h2", [dev(0, 2, gateway=""), dev(1, 2)]),
    ]
    assert targets(net_health_targets_by_host(servers, "gateway")) == {"h1": [(0, "198.19.0.254")], "h2": [(1, "198.19.0.254")]}
    assert targets(net_health_targets_by_host(servers, "peer")) == {"h1": [(0, "198.19.0.20")], "h2": [(0, "198.19.0.10")]}


def test_one_server_probes_its_gateway_but_cannot_probe_a_peer():
    assert targets(net_health_targets_by_host([host("h1", [dev(0, 1)])], "gateway")) == {"h1": [(0, "198.19.0.254")]}
    with pytest.raises(AnsibleFilterError, match="net_health_targets_by_host: peer probing needs two servers or more"):
        net_health_targets_by_host([host("h1", [dev(0, 1)])], "peer")


@pytest.mark.parametrize(
    ("servers", "mode", "message"),
    [
        ([host("h1", [dev(0, 1)])], "keep", "netdetect mode 'keep' is unknown: use gateway or peer"),
        (
            [host("h1", [dev(0, 1)]), {"inventory_hostname": "h2", "ansible_facts": {}}],
            "gateway",
            "h2: no ascend_npu facts; run ascend.cluster.hccn_facts",
        ),
        ([{"ansible_facts": {}}], "gateway", "entry 0 has no inventory_hostname"),
    ],
    ids=["unknown mode", "a host without facts", "not a host's variables"],
)
def test_bad_input_is_refused_naming_what_to_fix(servers, mode, message):
    with pytest.raises(AnsibleFilterError, match=message):
        net_health_targets_by_host(servers, mode)


def test_changes_only_leaves_out_the_targets_the_facts_already_show():
    servers = [
        host("h1", [dev(0, 1, netdetect="198.19.0.20"), dev(1, 1, netdetect="198.19.0.254")]),  # device 1 probes the gateway, not h2
        host("h2", [dev(0, 2, netdetect="198.19.0.10"), dev(1, 2, netdetect="198.19.0.11")]),  # all set
    ]
    assert targets(net_health_targets_by_host(servers, "peer", changes_only=True)) == {"h1": [(1, "198.19.0.21")], "h2": []}
    assert targets(net_health_targets_by_host(servers, "gateway", changes_only=True)) == {
        "h1": [(0, "198.19.0.254")],
        "h2": [(0, "198.19.0.254"), (1, "198.19.0.254")],
    }
    # without it every device with a target is listed (hccn_config then compares with the devices)
    assert [len(v) for v in net_health_targets_by_host(servers, "peer").values()] == [2, 2]


def test_a_server_left_out_of_the_run_keeps_its_place_in_the_ring():
    """Issue 25 item 1: h2 could not be reached (allow_partial=true); h1 kept probing h2 instead of being pointed at h3."""
    servers = [host("h1", [dev(0, 1, netdetect="198.19.0.20")]), host("h3", [dev(0, 3, netdetect="198.19.0.20")])]
    ring = ["h1", "h2", "h3"]
    assert targets(net_health_targets_by_host(servers, "peer", ring=ring)) == {"h1": [], "h3": [(0, "198.19.0.10")]}
    assert targets(net_health_targets_by_host(servers, "peer", changes_only=True, ring=ring)) == {"h1": [], "h3": [(0, "198.19.0.10")]}
    # without the ring the ring closes around h2: what prepare did before
    assert targets(net_health_targets_by_host(servers, "peer")) == {"h1": [(0, "198.19.0.30")], "h3": [(0, "198.19.0.10")]}
    # gateway probing does not depend on the other servers; one server left with a peer left out: nothing to set
    assert targets(net_health_targets_by_host(servers, "gateway", ring=ring)) == {"h1": [(0, "198.19.0.254")], "h3": [(0, "198.19.0.254")]}
    assert targets(net_health_targets_by_host(servers[:1], "peer", ring=["h1", "h2"])) == {"h1": []}
    with pytest.raises(AnsibleFilterError, match="ring must list every server of the input; it lacks h3"):
        net_health_targets_by_host(servers, "peer", ring=["h1", "h2"])
