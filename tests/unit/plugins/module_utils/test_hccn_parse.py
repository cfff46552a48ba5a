"""Parsers of hccn_tool stdout: every variant of the reference, and clear failures."""

from __future__ import annotations

import re

import pytest

from ansible_collections.ascend.cluster.plugins.module_utils._hccn import parse as p
from tests.helpers import corpus

IP_CASES = [
    (
        "reference",
        "ipaddr:192.168.100.101\nnetmask:255.255.255.0\n",
        {"address": "192.168.100.101", "netmask": "255.255.255.0", "ips": [{"address": "192.168.100.101", "netmask": "255.255.255.0"}]},
    ),
    (
        "padded",
        "  ipaddr : 10.0.0.5  \r\nnetmask:   255.255.0.0 \n",
        {"address": "10.0.0.5", "netmask": "255.255.0.0", "ips": [{"address": "10.0.0.5", "netmask": "255.255.0.0"}]},
    ),
    (
        "several pairs",
        "ipaddr:192.168.1.10\nnetmask:255.255.255.0\nipaddr:10.1.1.10\nnetmask:255.0.0.0\n",
        {
            "address": "192.168.1.10",
            "netmask": "255.255.255.0",
            "ips": [{"address": "192.168.1.10", "netmask": "255.255.255.0"}, {"address": "10.1.1.10", "netmask": "255.0.0.0"}],
        },
    ),
    ("unset address", "ipaddr:0.0.0.0\nnetmask:0.0.0.0\n", {"address": "", "netmask": "", "ips": []}),
    (
        "upper-case key",
        "IPADDR:1.2.3.4\nNETMASK:255.255.255.255\n",
        {"address": "1.2.3.4", "netmask": "255.255.255.255", "ips": [{"address": "1.2.3.4", "netmask": "255.255.255.255"}]},
    ),
]


@pytest.mark.parametrize("name,raw,expected", IP_CASES, ids=[c[0] for c in IP_CASES])
def test_parse_ip(name, raw, expected):
    assert p.parse_ip(raw) == expected


SIMPLE_CASES = [
    (p.parse_gateway, "default gateway:192.168.100.1, Iface:eth0\n", {"gateway": "192.168.100.1", "iface": "eth0"}),
    (p.parse_gateway, "default gateway: 192.168.100.1 ,  Iface: eth12 \n", {"gateway": "192.168.100.1", "iface": "eth12"}),
    (p.parse_gateway, "default gateway:0.0.0.0, Iface:eth3\n", {"gateway": "", "iface": "eth3"}),
    (p.parse_gateway, "default gateway:10.0.0.1\n", {"gateway": "10.0.0.1", "iface": ""}),
    (p.parse_netdetect, "netdetect addr: 192.168.100.1\n", "192.168.100.1"),
    (p.parse_netdetect, "netdetect address: 192.98.92.131\n", "192.98.92.131"),
    (p.parse_netdetect, "netdetect addr:0.0.0.0\n", ""),
    (p.parse_netdetect, "netdetect address:   10.0.0.1   \n", "10.0.0.1"),
    (p.parse_net_health, "net health status: Success\n", "Success"),
    (p.parse_net_health, "net health status: Receive timeout\n", "Receive timeout"),
    (p.parse_net_health, "net health status:   Detect ip set  \n", "Detect ip set"),
    (p.parse_net_health, "net health status:Socket   fail\n", "Socket fail"),
    (p.parse_link, "link status: UP\n", "UP"),
    (p.parse_link, "link status: DOWN\n", "DOWN"),
    (p.parse_link, "link status:down \n", "DOWN"),
    (p.parse_mac, "mac addr: 78:B4:6A:00:01:02\n", "78:b4:6a:00:01:02"),
    (p.parse_mac, "mac addr:78-b4-6a-00-01-02\n", "78:b4:6a:00:01:02"),
    (
        p.parse_tls,
        "dev_id:0, tls switch[0](0:disable, 1:enable), tls preconfigured[1](0:non-preset, 1:preset), tls alarm time threshold[60]days\n",
        {"tls_switch": False, "tls_preconfigured": True, "tls_alarm_days": 60},
    ),
    (
        p.parse_tls,
        "dev_id:7, tls switch[1](0:disable, 1:enable), tls preconfigured[0](0:non-preset, 1:preset), tls alarm time threshold[ 30 ]days\n",
        {"tls_switch": True, "tls_preconfigured": False, "tls_alarm_days": 30},
    ),
    (
        # Without a preconfigured field: the HCCL documentation's TLS-inconsistency page (CANN 8.5,
        # hcclug_000045), first two lines of what `hccn_tool -i 0 -tls -g` printed there.
        p.parse_tls,
        "dev_id:0, tls switch[0](0:disable, 1:enable), tls alarm time threshold[60]days\ndev_id:0, [pub cert] info:\n",
        {"tls_switch": False, "tls_preconfigured": None, "tls_alarm_days": 60},
    ),
]


@pytest.mark.parametrize("parser,raw,expected", SIMPLE_CASES, ids=["%s-%d" % (c[0].__name__, i) for i, c in enumerate(SIMPLE_CASES)])
def test_simple_parsers(parser, raw, expected):
    assert parser(raw) == expected


BAD_CASES = [
    (p.parse_ip, ""),
    (p.parse_ip, "Cmd executed successfully!\n"),
    (p.parse_ip, "ipaddr:192.168.1.300\nnetmask:255.255.255.0\n"),
    (p.parse_ip, "netmask:255.255.255.0\n"),
    (p.parse_gateway, "gateway is 1.2.3.4\n"),
    (p.parse_gateway, "default gateway:not-an-ip, Iface:eth0\n"),
    (p.parse_netdetect, "netdetect: 1.2.3.4\n"),
    (p.parse_net_health, "net health status:\n"),
    (p.parse_link, "link status: FLAPPING\n"),
    (p.parse_link, ""),
    (p.parse_mac, "mac addr: zz\n"),
    (p.parse_tls, "dev_id:0, tls switch[x]\n"),
]


@pytest.mark.parametrize("parser,raw", BAD_CASES, ids=["%s-%d" % (c[0].__name__, i) for i, c in enumerate(BAD_CASES)])
def test_unparseable_raises_with_raw_text(parser, raw):
    with pytest.raises(p.ParseError) as info:
        parser(raw)
    assert info.value.raw == raw
    assert repr(raw) in str(info.value)


def test_net_health_values_are_the_reference_enum():
    assert len(p.NET_HEALTH_VALUES) == 10
    for value in p.NET_HEALTH_VALUES:
        assert p.parse_net_health("net health status: %s\n" % value) == value


# --------------------------------------------------------------------------- the corpus of real outputs

# hccn_tool query (the `-<query> -g` of the sample's command) -> its parser
CORPUS_PARSERS = {
    "ip": p.parse_ip,
    "gateway": p.parse_gateway,
    "netdetect": p.parse_netdetect,
    "net_health": p.parse_net_health,
    "link": p.parse_link,
    "tls": p.parse_tls,
    "mac": p.parse_mac,
    "ping": p.parse_ping,
}


@pytest.mark.parametrize("entry, raw", corpus.samples("hccn_tool"))
def test_every_real_hccn_tool_output_is_read_right(entry: dict, raw: str) -> None:
    query = re.search(r" -(\w+) -g\b", entry["command"])
    assert query and query.group(1) in CORPUS_PARSERS, "no parser for %r" % entry["command"]
    assert CORPUS_PARSERS[query.group(1)](raw) == entry["expect"]
