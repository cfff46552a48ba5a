"""hccn.conf parsing and the cross-check against the device."""

from __future__ import annotations

import pytest

from ansible_collections.ascend.cluster.plugins.module_utils._hccn import conf_file as c
from tests.helpers import corpus

CONF = """\
# written by hccn_tool
address_0=192.168.100.101
netmask_0=255.255.255.0
netdetect_0=192.168.100.1
gateway_0=192.168.100.1
send_arp_status_0=1
address_1 = 192.168.101.101
netmask_1=255.255.255.0
IPv6address_1=fe80::1
bond_address_2=10.0.0.2
garbage line
address_0=192.168.100.111
"""


def test_parse_conf_last_wins_and_keys_split_on_last_underscore():
    conf = c.parse_conf(CONF)
    assert conf[0]["address"] == "192.168.100.111"
    assert conf[0]["send_arp_status"] == "1"
    assert conf[1] == {"address": "192.168.101.101", "netmask": "255.255.255.0", "IPv6address": "fe80::1"}
    assert conf[2] == {"bond_address": "10.0.0.2"}


def test_read_conf(tmp_path):
    path = tmp_path / "hccn.conf"
    assert c.read_conf(str(path)) is None
    path.write_text(CONF)
    conf = c.read_conf(str(path))
    assert conf is not None and conf[1]["netmask"] == "255.255.255.0"


DEVICE = {"device_ip": "192.168.100.101", "netmask": "255.255.255.0", "gateway": "", "netdetect": "192.168.100.1"}

STALE_CASES = [
    ("agrees", {"address": "192.168.100.101", "netmask": "255.255.255.0", "netdetect": "192.168.100.1"}, DEVICE, []),
    (
        "gateway 0.0.0.0 is unset",
        {"address": "192.168.100.101", "netmask": "255.255.255.0", "netdetect": "192.168.100.1", "gateway": "0.0.0.0"},
        DEVICE,
        [],
    ),
    ("old address", {"address": "192.168.100.5", "netmask": "255.255.255.0", "netdetect": "192.168.100.1"}, DEVICE, ["address"]),
    ("device not in file", {}, DEVICE, ["address", "netmask", "netdetect"]),
    (
        "file has a gateway the device lost",
        {"address": "192.168.100.101", "netmask": "255.255.255.0", "netdetect": "192.168.100.1", "gateway": "192.168.100.1"},
        DEVICE,
        ["gateway"],
    ),
    ("fresh device, nothing anywhere", {}, {"device_ip": "", "netmask": "", "gateway": "", "netdetect": ""}, []),
    ("unknown values not compared", {"address": "1.1.1.1"}, {"device_ip": None, "netmask": None, "gateway": None, "netdetect": None}, []),
]


@pytest.mark.parametrize("name,conf,device,expected", STALE_CASES, ids=[s[0] for s in STALE_CASES])
def test_stale_keys(name, conf, device, expected):
    assert c.stale_keys(device, conf) == expected


@pytest.mark.parametrize("entry, raw", corpus.samples("hccn_conf"))
def test_every_real_hccn_conf_is_read_right(entry: dict, raw: str) -> None:
    assert c.parse_conf(raw) == entry["expect"]
