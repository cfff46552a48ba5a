"""The multi-host test bed works and is safe: real SSH, own files per host, no way out."""

from __future__ import annotations

import base64
import ipaddress
import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from tests.helpers.ansible_cli import run_adhoc, run_playbook
from tests.testbed.bedlib.layout import GUARD_NET
from tests.testbed.harness import Bed, bed_cli, bed_status, leftovers, net_health, unique_prefix, wait_health


def _read_or_none(path: Path) -> bytes | None:
    return path.read_bytes() if path.exists() else None


def test_ansible_reaches_every_host_over_ssh(bed: Bed) -> None:
    """... with pinned host keys, never touching the machine's own known_hosts."""
    known_hosts = Path.home() / ".ssh" / "known_hosts"
    before = _read_or_none(known_hosts)
    results = run_adhoc("ascend", "ansible.builtin.ping", inventory=bed.inventory)
    assert sorted(results) == bed.hosts == ["h1", "h2", "h3"]
    for host, result in results.items():
        assert result["ping"] == "pong", (host, result)
    assert _read_or_none(known_hosts) == before, "the bed wrote to the machine's ~/.ssh/known_hosts"


def test_each_host_has_its_own_hostname(bed: Bed) -> None:
    results = run_adhoc("ascend", "ansible.builtin.setup", {"filter": "ansible_hostname"}, inventory=bed.inventory)
    assert {h: r["ansible_facts"]["ansible_hostname"] for h, r in results.items()} == {h: h for h in bed.hosts}


def test_each_host_has_its_own_hccn_conf(bed: Bed) -> None:
    """Ansible writes (atomic rename into the /etc overlay) different content on each host."""
    controller_before = _read_or_none(Path("/etc/hccn.conf"))
    saved = {h: bed.exec(h, "cat", "/etc/hccn.conf", check=False).stdout for h in bed.hosts}
    content = "address_0=198.19.0.{{ ascend_bed_host_index }}\nnetmask_0=255.255.255.0\n"
    try:
        results = run_adhoc(
            "ascend",
            "ansible.builtin.copy",
            {"dest": "/etc/hccn.conf", "content": content, "mode": "0640"},
            inventory=bed.inventory,
        )
        assert all(r["_status"] in ("CHANGED", "SUCCESS") for r in results.values()), results
        read = run_adhoc("ascend", "ansible.builtin.slurp", {"src": "/etc/hccn.conf"}, inventory=bed.inventory)
        for n, host in enumerate(bed.hosts, start=1):
            expected = f"address_0=198.19.0.{n}\nnetmask_0=255.255.255.0\n"
            assert base64.b64decode(read[host]["content"]).decode() == expected
            assert bed.exec(host, "cat", "/etc/hccn.conf").stdout == expected
        assert _read_or_none(Path("/etc/hccn.conf")) == controller_before, "a host's write leaked into the controller's /etc"
    finally:
        for host, text in saved.items():
            bed.exec(host, "sh", "-c", 'printf %s "$1" > /etc/hccn.conf', "sh", text)


@pytest.mark.parametrize("path", ["/tmp/bed-probe", "/root/bed-probe", "/usr/local/bin/bed-probe", "/etc/bed-probe"])
def test_private_directories_stay_private(bed: Bed, path: str) -> None:
    bed.exec("h1", "sh", "-c", f"echo h1 > {path}")
    try:
        assert bed.exec("h1", "cat", path).stdout == "h1\n"
        assert bed.exec("h2", "test", "-e", path, check=False).returncode == 1, f"h2 sees h1's {path}"
        assert not os.path.exists(path), f"the controller sees h1's {path}"
    finally:
        bed.exec("h1", "rm", "-f", path)


def test_guard_route_is_in_the_root_namespace(bed: Bed) -> None:
    assert bed_status(bed.prefix)["guard_route"] is True
    out = bed_cli("status", "--prefix", bed.prefix).stdout
    assert "guard route unreachable 198.18.0.0/15: present" in out


def test_hosts_have_no_default_route(bed: Bed) -> None:
    results = run_adhoc("ascend", "ansible.builtin.setup", {"filter": "ansible_default_ipv4"}, inventory=bed.inventory)
    assert {h: r["ansible_facts"]["ansible_default_ipv4"] for h, r in results.items()} == {h: {} for h in bed.hosts}


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        (["ip", "-4", "route", "show", "default"], ""),
        (["sysctl", "-n", "net.ipv4.ip_forward"], "0\n"),
        (["sh", "-c", "grep -c '^nameserver' /etc/resolv.conf || true"], "0\n"),
        (["sh", "-c", "ip route get 192.0.2.1 2>&1 || true"], "RTNETLINK answers: Network is unreachable\n"),
        (["getent", "hosts", "h2"], None),  # checked below: the bed's own names resolve
    ],
    ids=["no-default-route", "no-forwarding", "no-nameserver", "outside-unreachable", "bed-names"],
)
def test_hosts_cannot_get_out(bed: Bed, command: list, expected: str | None) -> None:
    for host in bed.hosts:
        out = bed.exec(host, *command).stdout
        if expected is None:
            assert out.split() == [bed.mgmt_ip("h2"), "h2"]
        else:
            assert out == expected, (host, command, out)


def test_topology_is_exactly_as_documented(bed: Bed) -> None:
    """No uplink anywhere: each namespace holds only the bed's own links and addresses."""
    p, devices = bed.prefix, [f"eth{d}" for d in range(8)]
    assert bed_status(p)["objects"] == sorted([f"{p}-fab", f"{p}-h1", f"{p}-h2", f"{p}-h3"]) + sorted(
        [f"{p}-h1m", f"{p}-h2m", f"{p}-h3m", f"{p}-m"]
    )
    for host in bed.hosts:
        assert sorted(bed.exec(host, "ls", "/sys/class/net").stdout.split()) == sorted(devices + ["lo", "mgmt0"])
        links = json.loads(bed.exec(host, "ip", "-j", "addr", "show").stdout)
        addresses = {(link["ifname"], a["family"], a["local"]) for link in links for a in link.get("addr_info", [])}
        # ethK addresses come and go with hccn_tool (other tests); they must stay in the range.
        device_addresses = {a for a in addresses if a[0] in devices}
        assert all(fam == "inet" and ipaddress.ip_address(ip) in GUARD_NET for _ifname, fam, ip in device_addresses)
        assert addresses - device_addresses == {("lo", "inet", "127.0.0.1"), ("mgmt0", "inet", bed.mgmt_ip(host))}
    ports = [f"{h}e{d}" for h in bed.hosts for d in range(8)]
    fabric = bed_cli_in_netns(bed.state["fabric_netns"], "ls", "/sys/class/net").split()
    assert sorted(fabric) == sorted(ports + ["fab0", "lo"])


def test_fabric_namespace_does_not_forward(bed: Bed) -> None:
    fabric = bed.state["fabric_netns"]
    assert bed_cli_in_netns(fabric, "sysctl", "-n", "net.ipv4.ip_forward") == "0\n"
    assert bed_cli_in_netns(fabric, "ip", "-4", "route", "show") == ""


def bed_cli_in_netns(netns: str, *command: str) -> str:
    return subprocess.run(["ip", "netns", "exec", netns, *command], capture_output=True, text=True, check=True).stdout


# --- parameter plane: hccn_tool on two hosts, a cut link, Fault, restore -----------------------
HEALTH_PLAY = """
- hosts: h1:h2
  gather_facts: false
  tasks:
    - name: Device 0 gets its parameter-plane address
      ansible.builtin.command:
        argv: [hccn_tool, -i, "0", "-ip", -s, address, "198.19.0.{{ ascend_bed_host_index }}", netmask, 255.255.255.0]
      changed_when: true
    - name: Its netdetect target is the other host's device 0
      ansible.builtin.command:
        argv: [hccn_tool, -i, "0", "-netdetect", -s, address, "198.19.0.{{ 3 - ascend_bed_host_index }}"]
      changed_when: true
"""


def test_cut_parameter_plane_link_shows_fault(bed: Bed, tmp_path: Path) -> None:
    play = tmp_path / "health.yml"
    play.write_text(HEALTH_PLAY)
    result = run_playbook(play, bed.inventory)
    assert result.rc == 0, str(result)
    ok = {h: "net health status: Success" for h in ("h1", "h2")}
    assert wait_health(bed, ok) == ok
    bed.cut("h2", 0)
    try:
        assert bed.exec("h2", "hccn_tool", "-i", "0", "-link", "-g").stdout == "link status: DOWN\n"
        assert wait_health(bed, {"h2": "net health status: Fault"}) == {"h2": "net health status: Fault"}
        assert net_health(bed, "h1") == "net health status: Receive timeout", "h1 still reaches a cut peer"
        assert bed.exec("h2", "hccn_tool", "-i", "1", "-link", "-g").stdout == "link status: UP\n"
    finally:
        bed.restore("h2", 0)
    assert bed.exec("h2", "hccn_tool", "-i", "0", "-link", "-g").stdout == "link status: UP\n"
    assert wait_health(bed, ok) == ok


# --- lifecycle: idempotent up/down, nothing left behind -------------------------------------
def test_up_and_down_are_idempotent_and_leave_only_the_guard_route() -> None:
    prefix = unique_prefix()
    try:
        first = Bed.up(prefix, 2)
        second = Bed.up(prefix, 2)
        assert second.state["pids"] == first.state["pids"], "a second up restarted a healthy bed"
        assert all(bed_status(prefix)["health"].values())
        wrong = bed_cli("up", "--hosts", "3", "--prefix", prefix, check=False)
        assert wrong.returncode == 1 and f"run `bed.py down --prefix {prefix}` first" in wrong.stderr
    finally:
        bed_cli("down", "--prefix", prefix)
    bed_cli("down", "--prefix", prefix)
    assert leftovers(prefix) == []
    status = bed_status(prefix)
    assert status["state"] is None and status["guard_route"] is True
    assert bed_cli("status", "--prefix", prefix, check=False).returncode == 3


def test_a_dead_host_is_reported_and_up_repairs_it() -> None:
    prefix = unique_prefix()
    try:
        bed = Bed.up(prefix, 2, "--no-sim")
        os.kill(bed.state["pids"]["h2"], 15)
        deadline = time.monotonic() + 5
        while bed_status(prefix)["health"]["h2"] and time.monotonic() < deadline:
            time.sleep(0.05)
        assert bed_status(prefix)["health"] == {"h1": True, "h2": False}
        assert bed_cli("status", "--prefix", prefix, check=False).returncode == 1
        repaired = Bed.up(prefix, 2, "--no-sim")
        assert all(bed_status(prefix)["health"].values())
        assert run_adhoc("ascend", "ansible.builtin.ping", inventory=repaired.inventory)["h2"]["ping"] == "pong"
    finally:
        bed_cli("down", "--prefix", prefix)
    assert leftovers(prefix) == []


def test_down_cleans_up_by_name_when_state_is_lost() -> None:
    """A crash can lose state.json: down still finds the bed by its prefix and ends its hosts."""
    prefix = unique_prefix()
    try:
        bed = Bed.up(prefix, 2, "--no-sim")
        Path(bed.state["inventory"]).with_name("state.json").unlink()
        assert bed_status(prefix)["objects"], "namespaces and links should still be listed"
    finally:
        bed_cli("down", "--prefix", prefix)
    assert leftovers(prefix) == []


def test_bad_arguments_fail_with_a_clear_message() -> None:
    cases = [
        (["up", "--hosts", "17", "--prefix", "abzz00"], "a bed has 2 to 16 hosts"),
        (["up", "--hosts", "2", "--prefix", "AB-1"], "bad prefix 'AB-1'"),
        (["exec", "--prefix", "abzz00", "h1", "--", "true"], "bed abzz00 is not up"),
    ]
    for args, message in cases:
        proc = bed_cli(*args, check=False)
        assert proc.returncode == 1 and message in proc.stderr, (args, proc.stderr)
    assert json.loads(bed_cli("status", "--prefix", "abzz00", "--json", check=False).stdout)["state"] is None


def test_exec_passes_the_exit_code_through(bed: Bed) -> None:
    assert bed.exec("h3", "sh", "-c", "hostname; exit 7", check=False).returncode == 7
    assert bed.exec("h3", "pwd").stdout == "/root\n"
