"""Fault injection with ``ascend-sim fault``: each kind, and ``clear``."""

from __future__ import annotations

import os
import shutil
import subprocess
import time

import pytest

from ansible_collections.ascend.cluster.plugins.module_utils._hccn.parse import NET_HEALTH_VALUES
from tests.simulator.simhelpers import ASCEND_SIM, run, sim


def test_error_device_fails_every_call(host):
    host.set_ip(2, "10.0.2.5")
    host.fault("error", "--device", "2")
    for args in (
        ("-ip", "-g"),
        ("-link", "-g"),
        ("-net_health", "-g"),
        ("-tls", "-g"),
        ("-ip", "-s", "address", "10.0.2.6", "netmask", "255.255.255.0"),
    ):
        proc = host.hccn("-i", "2", *args)
        assert (proc.returncode, proc.stdout, proc.stderr) == (1, "", "Command execute failed!\n")
    assert host.ok("-i", "3", "-link", "-g") == "link status: UP\n"
    host.fault("error", "--device", "2", "--off")
    assert host.ok("-i", "2", "-ip", "-g") == "ipaddr:10.0.2.5\nnetmask:255.255.255.0\n"


def test_link_fault_accepts_lists_and_all(host):
    host.fault("link", "--device", "1,4", "--down")
    assert [host.ok("-i", str(d), "-link", "-g") for d in (0, 1, 4)] == ["link status: UP\n", "link status: DOWN\n", "link status: DOWN\n"]
    host.fault("link", "--device", "all", "--down")
    assert host.ok("-i", "7", "-link", "-g") == "link status: DOWN\n"


def test_fault_on_missing_device_is_refused(host):
    proc = run([ASCEND_SIM, "fault", "--state", host.state, "link", "--device", "12", "--down"])
    assert proc.returncode == 1
    assert "device 12 does not exist on this host" in proc.stderr


def test_stale_conf_disagrees_with_device(host):
    host.set_ip(0, "192.168.100.101")
    host.set_ip(1, "192.168.101.101")
    before = host.conf.read_text()
    host.fault("stale-conf", "--device", "0")
    conf = dict(line.split("=", 1) for line in host.conf_lines())
    assert conf["address_0"] != "192.168.100.101"
    assert conf["address_1"] == "192.168.101.101"
    # the device is the truth
    assert host.ok("-i", "0", "-ip", "-g") == "ipaddr:192.168.100.101\nnetmask:255.255.255.0\n"
    host.fault("clear")
    assert host.conf.read_text() == before


def test_stale_conf_with_explicit_address(host):
    host.set_ip(3, "192.168.103.101")
    host.fault("stale-conf", "--device", "3", "--address", "192.168.103.250")
    assert "address_3=192.168.103.250" in host.conf_lines()


def test_latency_fault_and_env_override(host):
    host.fault("latency", "--seconds", "0.4")
    start = time.monotonic()
    host.ok("-i", "0", "-link", "-g")
    assert time.monotonic() - start >= 0.4
    # Without the latency these calls return long before a 60 s delay would end (the helper's
    # subprocess timeout is 60 s, so a call that waited would fail the test).
    host.fault("latency", "--seconds", "600")
    assert host.hccn("-i", "0", "-link", "-g", env={"ASCEND_SIM_LATENCY": "0"}).returncode == 0
    host.fault("clear")
    host.ok("-i", "0", "-link", "-g")


def test_latency_is_not_applied_to_argument_errors(host):
    host.fault("latency", "--seconds", "600")
    assert host.hccn("-i", "42", "-ip", "-g").returncode == 4


def test_driver_missing_gives_127_and_clear_restores(host, tmp_path):
    bin_dir = tmp_path / "bin"
    sim("-q", "install", "--bin-dir", bin_dir, "--state", host.state)
    shell = shutil.which("sh")
    assert shell is not None
    env = dict(os.environ, PATH="%s:/usr/bin:/bin" % bin_dir)
    probe = [shell, "-c", "hccn_tool -i 0 -link -g"]
    assert subprocess.run(probe, env=env, capture_output=True, text=True, check=False).stdout == "link status: UP\n"
    host.fault("driver-missing")
    assert not (bin_dir / "hccn_tool").exists()
    assert (bin_dir / "npu-smi").exists()
    assert subprocess.run(probe, env=env, capture_output=True, text=True, check=False).returncode == 127
    host.fault("clear")
    assert subprocess.run(probe, env=env, capture_output=True, text=True, check=False).stdout == "link status: UP\n"


def test_driver_missing_needs_an_install(host):
    proc = run([ASCEND_SIM, "fault", "--state", host.state, "driver-missing"])
    assert proc.returncode == 1 and "ascend-sim install" in proc.stderr


def test_clear_resets_everything(make_host):
    a, b = make_host("a"), make_host("b")
    a.set_ip(0, "192.168.100.101")
    b.set_ip(0, "192.168.100.111")
    a.ok("-i", "0", "-netdetect", "-s", "address", "192.168.100.111")
    a.fault("link", "--device", "1", "--down")
    a.fault("error", "--device", "2")
    a.fault("tls", "--device", "0", "--switch", "1")
    a.fault("health", "--device", "3", "--status", "Thread error")
    a.fault("unreachable", "--ip", "192.168.100.111")
    a.fault("latency", "--seconds", "0.2")
    a.fault("clear")
    state = a.show()
    assert state["faults"] == {"latency": None, "unreachable": [], "stale_conf": None, "driver_missing": []}
    assert a.ok("-i", "1", "-link", "-g") == "link status: UP\n"
    assert a.ok("-i", "2", "-link", "-g") == "link status: UP\n"
    assert a.ok("-i", "3", "-net_health", "-g") == "net health status: Init\n"
    assert a.ok("-i", "0", "-net_health", "-g") == "net health status: Success\n"
    # clear keeps the configuration
    assert a.ok("-i", "0", "-ip", "-g") == "ipaddr:192.168.100.101\nnetmask:255.255.255.0\n"


# Every net health value the collection's parser knows (reference section 1) can be forced, and is printed as is.
@pytest.mark.parametrize("status", NET_HEALTH_VALUES)
def test_every_health_value_can_be_forced(host, status):
    host.fault("health", "--device", "0", "--status", status)
    assert host.ok("-i", "0", "-net_health", "-g") == "net health status: %s\n" % status


def test_chip_health_and_version_show_in_npu_smi_info_until_clear(host):
    host.fault("chip-health", "--device", "3", "--status", "Alarm")
    host.fault("chip-health", "--device", "5", "--status", "Warning")
    host.fault("npu-smi-version", "--version", "23.0.rc2")
    table = host.npu_smi("info").stdout
    rows = {line.split()[1]: line.split("|")[2].strip() for line in table.splitlines() if line.startswith("| ") and "910B3" in line}
    assert rows == {str(d): ("Alarm" if d == 3 else "Warning" if d == 5 else "OK") for d in range(8)}
    assert table.splitlines()[1].split() == ["|", "npu-smi", "23.0.rc2", "Version:", "23.0.rc2", "|"]
    proc = run([ASCEND_SIM, "fault", "--state", host.state, "chip-health", "--device", "3", "--status", "Broken"])
    assert proc.returncode == 2 and "invalid choice: 'Broken'" in proc.stderr
    host.fault("clear")
    table = host.npu_smi("info").stdout
    assert "Alarm" not in table and "Warning" not in table and "23.0.rc2" not in table
