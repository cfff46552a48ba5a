"""plugin_utils: the fast IP check agrees with netaddr; the shared cluster checks work on their own."""

from __future__ import annotations

import netaddr
import pytest

from ansible_collections.ascend.cluster.plugins.module_utils._npu.chip import get_chip
from ansible_collections.ascend.cluster.plugins.plugin_utils._errors import ClusterSpecError
from ansible_collections.ascend.cluster.plugins.plugin_utils._rank.chip_rules import check_hccs_layout, device_id_of, ring_index
from ansible_collections.ascend.cluster.plugins.plugin_utils._rank.model import (
    RankDevice,
    RankServer,
    check_cluster,
    device_ranges,
    is_ip_address,
)

ADDRESSES = [
    "192.168.100.101",
    "0.0.0.0",
    "255.255.255.255",
    "10.0.0.1",
    "1.2.3.4",
    "256.1.1.1",
    "1.2.3",
    "1.2.3.4.5",
    "01.2.3.4",
    "1.2.3.04",
    " 1.2.3.4",
    "1.2.3.4 ",
    "1.2.3.4\n",
    "-.-.-.-",
    "",
    "a.b.c.d",
    "1..2.3",
    "fe80::1",
    "::",
    "2001:db8::8a2e:370:7334",
    "::ffff:1.2.3.4",
    "gggg::1",
    "1:2:3:4:5:6:7:8:9",
    "１.２.３.４",
    "0x1.2.3.4",
    "999.1.1.1",
    "1.2.3.-1",
]


@pytest.mark.parametrize("text", ADDRESSES)
def test_ip_check_agrees_with_netaddr(text):
    assert is_ip_address(text) == bool(netaddr.valid_ipv4(text) or netaddr.valid_ipv6(text))


@pytest.mark.parametrize(
    "value, chip, expected",
    [(0, "910A", 0), ("7", "910A", 7), (" 15 ", "A3", 15), (15, None, 15)],
)
def test_device_id_of(value, chip, expected):
    assert device_id_of(value, "here", get_chip(chip) if chip else None) == expected


@pytest.mark.parametrize("value", [True, -1, "1.5", None, 3.0, "x", 16])
def test_device_id_of_rejects(value):
    with pytest.raises(ClusterSpecError, match=r"^here: device_id"):
        device_id_of(value, "here", None)


@pytest.mark.parametrize(
    "ids, ring",
    [([0, 1], 0), ([1, 2], 0), ([0, 1, 2, 3], 0), ([4, 7], 1), ([0, 4], None), ([2, 3, 4, 5], None)],
)
def test_rings_of_910a(ids, ring):
    assert ring_index(get_chip("910A"), ids) == ring


def test_hccs_rules_apply_to_910a_only():
    odd = [("a", [0, 1, 2])]
    check_hccs_layout(get_chip("910B"), odd)
    check_hccs_layout(None, odd)
    with pytest.raises(ClusterSpecError, match="runs 1, 2, 4 or 8 devices per server"):
        check_hccs_layout(get_chip("910A"), odd)


def _servers(*layout):
    rank = 0
    servers = []
    for n, ids in enumerate(layout):
        server = RankServer(f"10.0.0.{n + 1}")
        for i in ids:
            server.devices.append(RankDevice(i, f"192.168.{n}.{i + 1}", rank))
            rank += 1
        servers.append(server)
    return servers


def test_check_cluster_accepts_a_good_cluster():
    check_cluster(_servers(range(8), range(8)), "1.0", get_chip("910A"))


def test_check_cluster_rank_gaps():
    servers = _servers([0, 1], [0, 1])
    servers[1].devices[1].rank_id = 7
    with pytest.raises(ClusterSpecError, match=r"rank_id 7 is outside 0\.\.3"):
        check_cluster(servers, "1.0", None)


@pytest.mark.parametrize("value", ["²", "１", "٣"])
def test_device_id_of_rejects_non_ascii_digits(value):
    with pytest.raises(ClusterSpecError, match="is not a whole number"):
        device_id_of(value, "here", None)


def test_without_netaddr_plain_ipv4_still_works_and_the_rest_says_what_to_install(monkeypatch):
    from ansible_collections.ascend.cluster.plugins.plugin_utils._rank import model as _rank_table_model

    monkeypatch.setattr(_rank_table_model, "netaddr", None)
    assert is_ip_address("192.168.1.1")
    with pytest.raises(ClusterSpecError, match="needs the netaddr Python library on the controller: pip install netaddr"):
        is_ip_address("fe80::1")


def test_check_cluster_super_pods_must_be_contiguous():
    servers = _servers([0], [0], [0])
    for server, pod in zip(servers, ["a", "b", "a"]):
        server.super_pod_id = pod
        server.devices[0].super_device_id = server.server_id
    with pytest.raises(ClusterSpecError, match="the servers of super pod a must be listed together"):
        check_cluster(servers, "1.2", get_chip("A3"))


@pytest.mark.parametrize(
    "ids, text",
    [([3], "3"), ([0, 1, 2, 3, 4, 5, 6, 7], "0-7"), ([7, 5, 0, 1, 2], "0-2, 5, 7"), ([0, 2, 3, 15], "0, 2-3, 15"), ([], "")],
)
def test_device_ranges_shorten_runs(ids, text):
    assert device_ranges(ids) == text
