"""Role ascend.cluster.firewall over SSH against test bed hosts: real ufw (Debian family) and the
firewalld stand-in (RHEL family, tests/firewalld_standin/). Each bed host has its own network
namespace and /etc, so only that host's firewall changes; the test proves the machine's own
rules did not move. The module brings up its own 2-host bed (fresh firewall state) and takes it down."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any, Iterator

import pytest

from tests.firewalld_standin import standin_host
from tests.helpers.ansible_cli import run_playbook
from tests.helpers.plays import firewall_play
from tests.testbed.harness import Bed, unique_prefix

UFW_TRAINING_RULES = ["ufw allow 22/tcp", "ufw allow 60000:60015/tcp", "ufw allow 29500/tcp", "ufw allow 8118/tcp", "ufw allow 29700/tcp"]


def machine_rules() -> str:
    """This machine's own (root namespace) filter rules: read only, to prove they never change."""
    return subprocess.run(["iptables", "-S"], capture_output=True, text=True, check=True).stdout


@pytest.fixture(scope="module")
def fw_bed() -> Iterator[Bed]:
    before = machine_rules()
    bed = Bed.up(unique_prefix(), 2)
    try:
        yield bed
    finally:
        bed.down()
    assert machine_rules() == before, "the machine's own firewall rules changed"


@pytest.fixture
def play(tmp_path: Path) -> Path:
    return firewall_play(tmp_path)


@pytest.fixture
def clean_ufw(fw_bed: Bed) -> Iterator[None]:
    """h1 and h2 start and end with ufw inactive, no rules, nothing reserved."""

    def reset() -> None:
        for host in fw_bed.hosts:
            fw_bed.exec(
                host,
                "sh",
                "-c",
                "ufw --force reset >/dev/null && rm -f /etc/ufw/*.rules.2* "
                "/etc/sysctl.d/60-ascend-hccl-ports.conf && echo > /proc/sys/net/ipv4/ip_local_reserved_ports",
            )

    reset()
    yield
    reset()


def ufw(bed: Bed, host: str) -> tuple[str, list[str]]:
    status = bed.exec(host, "ufw", "status").stdout.splitlines()[0]
    added = [line for line in bed.exec(host, "ufw", "show", "added").stdout.splitlines() if line.startswith("ufw ")]
    return status, added


def reserved(bed: Bed, host: str) -> str:
    return bed.exec(host, "cat", "/proc/sys/net/ipv4/ip_local_reserved_ports").stdout.strip()


def run(play: Path, bed: Bed, *, check: bool = False, limit: str | None = None, **extra):
    return run_playbook(play, bed.inventory, extra_vars=extra, check=check, limit=limit)


def test_disable_turns_ufw_off_once(fw_bed, play, clean_ufw):
    fw_bed.exec("h1", "sh", "-c", "ufw allow 22/tcp && ufw --force enable")
    first = run(play, fw_bed)
    assert first.rc == 0, first
    assert first.changed("h1") == 1 and first.changed("h2") == 0, first
    assert "h1    disable  ufw active    ran: ufw disable" in first.stdout
    assert "h2    disable  ufw inactive  nothing to do" in first.stdout
    assert ufw(fw_bed, "h1")[0] == "Status: inactive"
    second = run(play, fw_bed)
    assert second.rc == 0 and second.changed() == 0, second


def test_open_ports_keeps_ufw_up_with_only_the_training_ports(fw_bed, play, clean_ufw):
    checked = run(play, fw_bed, check=True, ascend_firewall_mode="open_ports")
    assert checked.rc == 0, checked
    assert "would run: ufw allow 22/tcp; ufw allow 60000:60015/tcp" in checked.stdout
    assert ufw(fw_bed, "h1") == ("Status: inactive", []) and reserved(fw_bed, "h1") == "", "check mode changed h1"

    first = run(play, fw_bed, ascend_firewall_mode="open_ports")
    assert first.rc == 0, first
    for host in fw_bed.hosts:
        assert ufw(fw_bed, host) == ("Status: active", UFW_TRAINING_RULES)
        assert reserved(fw_bed, host) == "60000-60015"
        conf = fw_bed.exec(host, "cat", "/etc/sysctl.d/60-ascend-hccl-ports.conf").stdout
        assert "net.ipv4.ip_local_reserved_ports = 60000-60015" in conf
    # SSH still works through the now active firewall, and nothing is left to do.
    second = run(play, fw_bed, ascend_firewall_mode="open_ports")
    assert second.rc == 0 and second.changed() == 0, second
    assert second.stdout.count("open_ports  ufw active  nothing to do") == 2


def test_open_ports_adds_only_what_is_missing_and_keeps_other_reservations(fw_bed, play, clean_ufw):
    fw_bed.exec("h2", "sh", "-c", "ufw allow 22/tcp && echo 1000-1010 > /proc/sys/net/ipv4/ip_local_reserved_ports")
    result = run(
        play,
        fw_bed,
        limit="h2",
        ascend_firewall_mode="open_ports",
        ascend_firewall_hccl_port_count=32,
        ascend_firewall_master_ports=[29500],
        ascend_firewall_extra_ports=["6006-6007"],
    )
    assert result.rc == 0, result
    assert "ran: ufw allow 60000:60031/tcp; ufw allow 29500/tcp; ufw allow 6006:6007/tcp; ufw --force enable" in result.stdout
    assert ufw(fw_bed, "h2")[1] == ["ufw allow 22/tcp", "ufw allow 60000:60031/tcp", "ufw allow 29500/tcp", "ufw allow 6006:6007/tcp"]
    assert reserved(fw_bed, "h2") == "1000-1010,60000-60031"


@pytest.fixture
def firewalld_h1(fw_bed: Bed) -> Iterator[None]:
    yield
    standin_host.remove(fw_bed, "h1")


def test_disable_stops_firewalld_through_systemctl(fw_bed, play, firewalld_h1):
    standin_host.install(fw_bed, "h1", active=True, enabled=True)
    first = run(play, fw_bed, limit="h1", ascend_firewall_backend="firewalld")
    assert first.rc == 0, first
    assert "firewalld active, enabled  ran: systemctl disable --now firewalld" in first.stdout
    state = standin_host.state(fw_bed, "h1")
    assert (state["active"], state["enabled"]) == (False, False)
    standin_host.clear_calls(fw_bed, "h1")
    second = run(play, fw_bed, limit="h1", ascend_firewall_backend="firewalld")
    assert second.rc == 0 and second.changed() == 0, second
    assert standin_host.calls(fw_bed, "h1") == ["systemctl is-active firewalld", "systemctl is-enabled firewalld"]


def test_open_ports_starts_firewalld_and_opens_saved_and_running_ports(fw_bed, play, firewalld_h1):
    standin_host.install(
        fw_bed, "h1", active=False, enabled=False, permanent={"public": [], "trusted": ["22/tcp"]}, runtime={"public": [], "trusted": []}
    )
    extra: dict[str, Any] = {
        "ascend_firewall_backend": "firewalld",
        "ascend_firewall_mode": "open_ports",
        "ascend_firewall_firewalld_zone": "trusted",
        "ascend_firewall_reserve_hccl_ports": False,
    }
    checked = run(play, fw_bed, limit="h1", check=True, **extra)
    assert checked.rc == 0, checked
    assert standin_host.state(fw_bed, "h1")["active"] is False, "check mode started firewalld"
    first = run(play, fw_bed, limit="h1", **extra)
    assert first.rc == 0, first
    state = standin_host.state(fw_bed, "h1")
    wanted = ["22/tcp", "60000-60015/tcp", "29500/tcp", "8118/tcp", "29700/tcp"]
    assert (state["active"], state["enabled"]) == (True, True)
    assert state["permanent"] == {"public": [], "trusted": wanted}
    assert state["runtime"] == {"public": [], "trusted": wanted}
    calls = standin_host.calls(fw_bed, "h1")
    assert "systemctl enable --now firewalld" in calls
    assert "firewall-cmd --permanent --zone=trusted --add-port=22/tcp" not in calls  # was saved already
    assert "firewall-cmd --zone=trusted --add-port=22/tcp" not in calls  # the start loaded it
    assert "firewall-cmd --permanent --zone=trusted --add-port=60000-60015/tcp" in calls
    second = run(play, fw_bed, limit="h1", **extra)
    assert second.rc == 0 and second.changed() == 0, second


def test_a_missing_firewall_is_reported_or_refused(fw_bed, play, firewalld_h1):
    standin_host.install(fw_bed, "h1", installed=False)
    disabled = run(play, fw_bed, limit="h1", ascend_firewall_backend="firewalld")
    assert disabled.rc == 0 and "firewalld not installed  nothing to do" in disabled.stdout, disabled
    opened = run(play, fw_bed, limit="h1", ascend_firewall_backend="firewalld", ascend_firewall_mode="open_ports")
    assert opened.rc != 0 and "firewalld is not installed; install it" in opened.stdout, opened
