"""hccn.conf rewrite semantics: exclusive flock, delete the key's line, append at the end, 0640."""

from __future__ import annotations

import fcntl
import os
import stat
import subprocess
import time

from tests.simulator.simhelpers import BIN


def test_ip_set_writes_address_then_netmask(host):
    host.set_ip(0, "192.168.100.101")
    assert host.conf_lines() == ["address_0=192.168.100.101", "netmask_0=255.255.255.0"]


def test_set_deletes_old_line_and_appends_new_one(host):
    host.set_ip(0, "192.168.100.101")
    host.set_ip(1, "192.168.101.101")
    host.ok("-i", "0", "-gateway", "-s", "gateway", "192.168.100.1")
    host.ok("-i", "0", "-netdetect", "-s", "address", "192.168.100.1")
    host.set_ip(0, "192.168.100.102")
    assert host.conf_lines() == [
        "address_1=192.168.101.101",
        "netmask_1=255.255.255.0",
        "gateway_0=192.168.100.1",
        "netdetect_0=192.168.100.1",
        "address_0=192.168.100.102",
        "netmask_0=255.255.255.0",
    ]


def test_gateway_and_netdetect_write_their_own_keys(host):
    host.set_ip(3, "10.0.3.5")
    host.ok("-i", "3", "-gateway", "-s", "gateway", "10.0.3.1")
    host.ok("-i", "3", "-netdetect", "-s", "address", "10.0.3.1")
    assert host.conf_lines()[-2:] == ["gateway_3=10.0.3.1", "netdetect_3=10.0.3.1"]


def test_other_keys_and_comments_survive(host):
    host.conf.write_text("# site settings\nsend_arp_status_0=1\nmtu_0=9000\naddress_0=1.2.3.4\n")
    host.set_ip(0, "192.168.100.101")
    assert host.conf_lines() == [
        "# site settings",
        "send_arp_status_0=1",
        "mtu_0=9000",
        "address_0=192.168.100.101",
        "netmask_0=255.255.255.0",
    ]


def test_ip_in_another_subnet_drops_the_gateway(host):
    host.set_ip(0, "192.168.100.101")
    host.ok("-i", "0", "-gateway", "-s", "gateway", "192.168.100.1")
    host.set_ip(0, "192.168.200.101")
    assert "gateway_0=192.168.100.1" not in host.conf_lines()
    assert host.hccn("-i", "0", "-gateway", "-g").returncode == 2


def test_mode_is_0640(host):
    os.chmod(host.conf, 0o666)
    host.set_ip(0, "192.168.100.101")
    assert stat.S_IMODE(os.stat(host.conf).st_mode) == 0o640


def test_mode_0640_when_created(host):
    host.conf.unlink()
    host.set_ip(0, "192.168.100.101")
    assert stat.S_IMODE(os.stat(host.conf).st_mode) == 0o640


def test_failed_set_leaves_conf_alone(host):
    host.set_ip(0, "192.168.100.101")
    before = host.conf.read_text()
    assert host.hccn("-i", "1", "-ip", "-s", "address", "192.168.100.101", "netmask", "255.255.255.0").returncode == 7
    assert host.conf.read_text() == before


def test_set_waits_for_the_exclusive_lock(host):
    """A set command blocks while someone else holds an exclusive flock on hccn.conf."""
    with open(host.conf, "a+") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        proc = subprocess.Popen(
            [str(BIN / "hccn_tool"), "-i", "0", "-ip", "-s", "address", "192.168.100.101", "netmask", "255.255.255.0"],
            env=dict(os.environ, **host.env),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        time.sleep(1.0)
        assert proc.poll() is None, "hccn_tool did not wait for the lock"
        assert host.conf.read_text() == ""
    out, err = proc.communicate(timeout=30)
    assert (proc.returncode, out, err) == (0, "Cmd executed successfully!\n", "")
    assert host.conf_lines() == ["address_0=192.168.100.101", "netmask_0=255.255.255.0"]


def test_concurrent_sets_lose_nothing(host):
    procs = []
    for dev in range(8):
        procs.append(
            subprocess.Popen(
                [str(BIN / "hccn_tool"), "-i", str(dev), "-ip", "-s", "address", "10.0.%d.5" % dev, "netmask", "255.255.255.0"],
                env=dict(os.environ, **host.env),
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        )
    for proc in procs:
        proc.communicate(timeout=60)
        assert proc.returncode == 0
    lines = host.conf_lines()
    assert sorted(lines) == sorted(["address_%d=10.0.%d.5" % (d, d) for d in range(8)] + ["netmask_%d=255.255.255.0" % d for d in range(8)])
    for dev in range(8):
        # each command's two lines stay together: address_N directly followed by netmask_N
        assert lines[lines.index("address_%d=10.0.%d.5" % (dev, dev)) + 1] == "netmask_%d=255.255.255.0" % dev
        assert host.ok("-i", str(dev), "-ip", "-g") == "ipaddr:10.0.%d.5\nnetmask:255.255.255.0\n" % dev
