"""Bed mode with fake ``ip`` / ``ping`` on PATH and a fake sysfs (the test bed tests it for real)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.simulator.simhelpers import BIN, run, sim

FAKE = """#!/bin/sh
echo "$(basename "$0") $*" >> "{log}"
{body}
"""


@pytest.fixture
def bed(tmp_path):
    fake_bin = tmp_path / "fakebin"
    fake_bin.mkdir()
    log = tmp_path / "calls.log"
    log.write_text("")
    (fake_bin / "ip").write_text(FAKE.format(log=log, body="exit 0"))
    # the fake network: only 198.18.0.2 answers
    (fake_bin / "ping").write_text(FAKE.format(log=log, body='case "$*" in *198.18.0.2) exit 0;; *) exit 1;; esac'))
    for f in fake_bin.iterdir():
        f.chmod(0o755)
    sysfs = tmp_path / "sysnet"
    for dev in range(8):
        (sysfs / ("eth%d" % dev)).mkdir(parents=True)
        (sysfs / ("eth%d" % dev) / "carrier").write_text("1\n")
        (sysfs / ("eth%d" % dev) / "operstate").write_text("up\n")
    state = tmp_path / "state"
    sim("-q", "init", "--state", state, "--chip", "910B", "--mode", "bed", "--hccn-conf", tmp_path / "hccn.conf", "--settle", "0")
    env = {"ASCEND_SIM_STATE": str(state), "ASCEND_SIM_SYSFS_NET": str(sysfs), "PATH": "%s:%s" % (fake_bin, os.environ["PATH"])}

    class Bed:
        sysfs: Path
        conf: Path

        def hccn(self, *args):
            return run([BIN / "hccn_tool", *args], env=env)

        def fault(self, *args):
            return run([BIN / "ascend-sim", "-q", "fault", "--state", state, *args], env=env)

        def calls(self):
            return log.read_text().splitlines()

    b = Bed()
    b.sysfs = sysfs
    b.conf = tmp_path / "hccn.conf"
    return b


def test_ip_set_applies_the_address(bed):
    proc = bed.hccn("-i", "3", "-ip", "-s", "address", "198.18.0.1", "netmask", "255.255.255.0")
    assert (proc.returncode, proc.stdout) == (0, "Cmd executed successfully!\n")
    assert bed.calls() == ["ip -4 addr flush dev eth3", "ip addr add 198.18.0.1/24 dev eth3"]


@pytest.mark.parametrize("address", ["192.168.100.101", "10.0.0.1", "198.20.0.1", "198.17.255.1"])
def test_guard_refuses_addresses_outside_198_18_0_0_15(bed, address):
    proc = bed.hccn("-i", "0", "-ip", "-s", "address", address, "netmask", "255.255.255.0")
    assert proc.returncode == 125 and proc.stdout == ""
    assert proc.stderr.startswith(
        "ascend-sim: refusing to configure %s: in bed mode the simulator only puts "
        "addresses from 198.18.0.0/15 on real interfaces" % address
    )
    assert bed.calls() == []
    assert bed.conf.read_text() == ""
    assert bed.hccn("-i", "0", "-ip", "-g").returncode == 13


def test_guard_allows_198_19(bed):
    assert bed.hccn("-i", "1", "-ip", "-s", "address", "198.19.255.1", "netmask", "255.255.0.0").returncode == 0


def test_link_follows_sysfs(bed):
    assert bed.hccn("-i", "2", "-link", "-g").stdout == "link status: UP\n"
    (bed.sysfs / "eth2" / "carrier").write_text("0\n")
    assert bed.hccn("-i", "2", "-link", "-g").stdout == "link status: DOWN\n"
    assert bed.hccn("-i", "7", "-link", "-g").stdout == "link status: UP\n"
    (bed.sysfs / "eth7" / "operstate").write_text("down\n")
    assert bed.hccn("-i", "7", "-link", "-g").stdout == "link status: DOWN\n"


def test_missing_interface_is_down(bed):
    import shutil

    shutil.rmtree(bed.sysfs / "eth5")
    assert bed.hccn("-i", "5", "-link", "-g").stdout == "link status: DOWN\n"


def test_net_health_and_ping_use_real_ping(bed):
    bed.hccn("-i", "0", "-ip", "-s", "address", "198.18.0.1", "netmask", "255.255.255.0")
    bed.hccn("-i", "0", "-netdetect", "-s", "address", "198.18.0.2")
    assert bed.hccn("-i", "0", "-net_health", "-g").stdout == "net health status: Success\n"
    assert "ping -c 1 -W 1 -I eth0 198.18.0.2" in bed.calls()
    assert bed.hccn("-i", "0", "-ping", "-g", "address", "198.18.0.2").returncode == 0
    bed.hccn("-i", "0", "-netdetect", "-s", "address", "198.18.0.3")
    assert bed.hccn("-i", "0", "-net_health", "-g").stdout == "net health status: Receive timeout\n"
    assert bed.hccn("-i", "0", "-ping", "-g", "address", "198.18.0.3").returncode == 1
    (bed.sysfs / "eth0" / "carrier").write_text("0\n")
    assert bed.hccn("-i", "0", "-net_health", "-g").stdout == "net health status: Fault\n"


def test_link_fault_sets_the_interface(bed):
    assert bed.fault("link", "--device", "4", "--down").returncode == 0
    assert "ip link set dev eth4 down" in bed.calls()
    assert bed.hccn("-i", "4", "-link", "-g").stdout == "link status: DOWN\n"
    assert bed.fault("clear").returncode == 0
    assert "ip link set dev eth4 up" in bed.calls()


def test_get_commands_spawn_nothing(bed):
    bed.hccn("-i", "0", "-ip", "-s", "address", "198.18.0.1", "netmask", "255.255.255.0")
    before = len(bed.calls())
    for cmd in ("-ip", "-gateway", "-netdetect", "-link", "-tls", "-mac", "-net_health"):
        bed.hccn("-i", "0", cmd, "-g")
    assert len(bed.calls()) == before  # no netdetect set: net_health answers Init without pinging
