"""host_firewall's logic (HostFirewall) against transcripts: each case gives the commands' answers,
and checks the exact commands called, in order, what was found, the action text and changed.

Commands not in a case's answers succeed with no output (every call is asserted anyway).
"""

from __future__ import annotations

import stat
from pathlib import Path
from typing import Any

import pytest

from ansible_collections.ascend.cluster.plugins.module_utils._host import firewall as fw

OK = (0, "", "")
INACTIVE = (0, "Status: inactive\n", "")
ACTIVE = (0, "Status: active\n\nTo                         Action      From\n--                         ------      ----\n", "")
ADDED = "Added user rules (see 'ufw status' for running firewall):\n"
NO_RULES = (0, ADDED + "(None)\n", "")
ALL_RULES = (0, ADDED + "ufw allow 22/tcp\nufw allow 60000:60015/tcp\nufw allow 29500/tcp\nufw allow 8118/tcp\nufw allow 29700/tcp\n", "")
MISSING = FileNotFoundError(2, "No such file or directory")
SYSCTL = "sysctl -w net.ipv4.ip_local_reserved_ports="
UFW_ALL = "ufw allow 22/tcp; ufw allow 60000:60015/tcp; ufw allow 29500/tcp; ufw allow 8118/tcp; ufw allow 29700/tcp"
FWD = {
    "systemctl is-active firewalld": (3, "inactive\n", ""),
    "systemctl is-enabled firewalld": (1, "disabled\n", ""),
}
FWD_UP = {
    "systemctl is-active firewalld": (0, "active\n", ""),
    "systemctl is-enabled firewalld": (0, "enabled\n", ""),
}
FWD_NONE = {
    "systemctl is-active firewalld": (4, "inactive\n", ""),
    "systemctl is-enabled firewalld": (1, "not-found\n", ""),
}
CONF = (
    "# Written by the ascend.cluster.firewall role: keep ephemeral ports out of HCCL's host range.\nnet.ipv4.ip_local_reserved_ports = %s\n"
)


SYSTEMCTL_READS = ["systemctl is-active firewalld", "systemctl is-enabled firewalld"]
START = "systemctl enable --now firewalld"
THREE = ["60000-60015", "29500", "8118", "29700"]


def port_lists(zone: str = "", saved: str = "", running: str = "") -> dict[str, Any]:
    """firewall-cmd's two port lists (saved, running) and their answers, in the order they are read."""
    zone_arg = "--zone=%s " % zone if zone else ""
    return {
        "firewall-cmd %s--permanent --list-ports" % zone_arg: (0, saved, ""),
        "firewall-cmd %s--list-ports" % zone_arg: (0, running, ""),
    }


def adds(zone: str, permanent: bool, ports: list[str]) -> list[str]:
    """The firewall-cmd command lines that add ``ports`` (TCP) to the saved or the running configuration."""
    head = "firewall-cmd " + ("--permanent " if permanent else "") + ("--zone=%s " % zone if zone else "")
    return [head + "--add-port=%s/tcp" % port for port in ports]


class FakeHost:
    """The runner: answers each command line from ``answers`` (OK when absent), records the calls."""

    def __init__(self, answers: dict[str, Any]) -> None:
        self.answers = answers
        self.calls: list[str] = []

    def __call__(self, argv: list, timeout: float | None = None, env: dict | None = None) -> tuple[int, str, str]:
        assert isinstance(argv, list) and all(isinstance(a, str) for a in argv)
        assert env == {"LC_ALL": "C"} and timeout == fw.COMMAND_TIMEOUT
        line = " ".join(argv)
        self.calls.append(line)
        answer = self.answers.get(line, OK)
        if isinstance(answer, BaseException):
            raise answer
        return answer


class Host:
    """A host's files (os-release, the reserved ports, the sysctl file) under tmp_path, and a run of HostFirewall."""

    def __init__(self, tmp_path: Path, reserved: str = "", os_release: str = "ID=debian\n", conf: str | None = None) -> None:
        self.dir = tmp_path
        self.reserved = tmp_path / "ip_local_reserved_ports"
        self.reserved.write_text(reserved + "\n")
        self.os_release = tmp_path / "os-release"
        self.os_release.write_text(os_release)
        self.conf = tmp_path / "60-ascend-hccl-ports.conf"
        if conf is not None:
            self.conf.write_text(conf)
        self.runner = FakeHost({})

    def params(self, **over: Any) -> dict[str, Any]:
        params = dict(
            mode="disable",
            backend="auto",
            ssh_port=22,
            hccl_base_port=60000,
            hccl_port_count=16,
            master_ports=[29500, 8118, 29700],
            extra_ports=[],
            reserve_hccl_ports=True,
            sysctl_file=str(self.conf),
            firewalld_zone="",
        )
        params.update(over)
        return params

    def run(self, answers: dict[str, Any], check_mode: bool = False, euid: int = 0, **params: Any) -> dict[str, Any]:
        self.runner = FakeHost(answers)
        firewall = fw.HostFirewall(
            self.params(**params),
            check_mode=check_mode,
            runner=self.runner,
            os_release_files=[str(self.dir / "missing-os-release"), str(self.os_release)],
            reserved_ports_file=str(self.reserved),
            euid=euid,
        )
        return firewall.run()

    def fails(self, answers: dict[str, Any], check_mode: bool = False, euid: int = 0, **params: Any) -> fw.FirewallError:
        with pytest.raises(fw.FirewallError) as caught:
            self.run(answers, check_mode=check_mode, euid=euid, **params)
        return caught.value


# (id, params, answers, check_mode, calls, found, action); the host has nothing reserved and no sysctl file.
CASES = [
    ("ufw disable, active", {}, {"ufw status": ACTIVE}, False, ["ufw status", "ufw disable"], "ufw active", "ran: ufw disable"),
    ("ufw disable, check mode", {}, {"ufw status": ACTIVE}, True, ["ufw status"], "ufw active", "would run: ufw disable"),
    ("ufw disable, inactive", {}, {"ufw status": INACTIVE}, False, ["ufw status"], "ufw inactive", "nothing to do"),
    ("ufw disable, no ufw", {}, {"ufw status": MISSING}, False, ["ufw status"], "ufw not installed", "nothing to do"),
    (
        "ufw open_ports, fresh, check mode",
        {"mode": "open_ports"},
        {"ufw status": INACTIVE, "ufw show added": NO_RULES},
        True,
        ["ufw status", "ufw show added"],
        "ufw inactive",
        "would run: %s; ufw --force enable; %s60000-60015; write {conf}" % (UFW_ALL, SYSCTL),
    ),
    (
        "ufw open_ports, fresh",
        {"mode": "open_ports"},
        {"ufw status": INACTIVE, "ufw show added": NO_RULES},
        False,
        ["ufw status", "ufw show added"] + UFW_ALL.split("; ") + ["ufw --force enable", SYSCTL + "60000-60015"],
        "ufw inactive",
        "ran: %s; ufw --force enable; %s60000-60015; write {conf}" % (UFW_ALL, SYSCTL),
    ),
    (
        "ufw open_ports, SSH there (with a comment), 32 ports, torch only, TensorBoard",
        {"mode": "open_ports", "hccl_port_count": 32, "master_ports": [29500], "extra_ports": ["6006-6007"], "reserve_hccl_ports": False},
        {"ufw status": ACTIVE, "ufw show added": (0, ADDED + "ufw allow 22/tcp comment 'ssh'\n", "")},
        False,
        ["ufw status", "ufw show added", "ufw allow 60000:60031/tcp", "ufw allow 29500/tcp", "ufw allow 6006:6007/tcp"],
        "ufw active",
        "ran: ufw allow 60000:60031/tcp; ufw allow 29500/tcp; ufw allow 6006:6007/tcp",
    ),
    (
        "ufw open_ports, another SSH port",
        {"mode": "open_ports", "ssh_port": 2222, "reserve_hccl_ports": False},
        {"ufw status": ACTIVE, "ufw show added": ALL_RULES},
        False,
        ["ufw status", "ufw show added", "ufw allow 2222/tcp"],
        "ufw active",
        "ran: ufw allow 2222/tcp",
    ),
    (
        "firewalld disable, running",
        {"backend": "firewalld"},
        FWD_UP,
        False,
        ["systemctl is-active firewalld", "systemctl is-enabled firewalld", "systemctl disable --now firewalld"],
        "firewalld active, enabled",
        "ran: systemctl disable --now firewalld",
    ),
    (
        "firewalld disable, stopped but enabled at boot",
        {"backend": "firewalld"},
        dict(FWD_UP, **{"systemctl is-active firewalld": (3, "inactive\n", "")}),
        False,
        ["systemctl is-active firewalld", "systemctl is-enabled firewalld", "systemctl disable --now firewalld"],
        "firewalld inactive, enabled",
        "ran: systemctl disable --now firewalld",
    ),
    (
        "firewalld disable, off",
        {"backend": "firewalld"},
        FWD,
        False,
        ["systemctl is-active firewalld", "systemctl is-enabled firewalld"],
        "firewalld inactive, disabled",
        "nothing to do",
    ),
    (
        "firewalld disable, not installed",
        {"backend": "firewalld"},
        FWD_NONE,
        False,
        ["systemctl is-active firewalld", "systemctl is-enabled firewalld"],
        "firewalld not installed",
        "nothing to do",
    ),
    (
        "firewalld open_ports, stopped: started first, then only the ports the start did not load",
        {"backend": "firewalld", "mode": "open_ports", "firewalld_zone": "trusted", "reserve_hccl_ports": False},
        dict(FWD, **port_lists("trusted", saved="22/tcp\n", running="22/tcp\n")),
        False,
        SYSTEMCTL_READS + [START] + list(port_lists("trusted")) + adds("trusted", True, THREE) + adds("trusted", False, THREE),
        "firewalld inactive, disabled",
        "ran: " + "; ".join([START] + adds("trusted", True, THREE) + adds("trusted", False, THREE)),
    ),
    (
        "firewalld open_ports, stopped, check mode: a stopped firewalld lists nothing, so every port is planned",
        {"backend": "firewalld", "mode": "open_ports", "master_ports": [], "reserve_hccl_ports": False},
        FWD,
        True,
        SYSTEMCTL_READS,
        "firewalld inactive, disabled",
        "would run: " + "; ".join([START] + adds("", True, ["22", "60000-60015"]) + adds("", False, ["22", "60000-60015"])),
    ),
    (
        "firewalld open_ports, running but not enabled at boot",
        {"backend": "firewalld", "mode": "open_ports", "master_ports": [], "reserve_hccl_ports": False},
        dict(
            FWD_UP,
            **{"systemctl is-enabled firewalld": (1, "disabled\n", "")},
            **port_lists(saved="22/tcp 60000-60015/tcp\n", running="22/tcp 60000-60015/tcp\n"),
        ),
        False,
        SYSTEMCTL_READS + [START] + list(port_lists()),
        "firewalld active, disabled",
        "ran: " + START,
    ),
    (
        "firewalld open_ports, running, one port only running (not saved)",
        {"backend": "firewalld", "mode": "open_ports", "master_ports": [29500], "reserve_hccl_ports": False},
        dict(FWD_UP, **port_lists(saved="22/tcp 60000-60015/tcp\n", running="22/tcp 60000-60015/tcp 29500/tcp\n")),
        True,
        SYSTEMCTL_READS + list(port_lists()),
        "firewalld active, enabled",
        "would run: firewall-cmd --permanent --add-port=29500/tcp",
    ),
]


@pytest.mark.parametrize(("params", "answers", "check_mode", "calls", "found", "action"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_reads_plans_and_runs_only_what_is_missing(tmp_path, params, answers, check_mode, calls, found, action):
    host = Host(tmp_path)
    result = host.run(answers, check_mode=check_mode, **params)
    assert host.runner.calls == calls
    assert result["found"] == found
    assert result["action"] == action.format(conf=host.conf)
    assert result["changed"] is (action != "nothing to do")
    steps = [] if action == "nothing to do" else action.split(": ", 1)[1].split("; ")
    assert [" ".join(argv) for argv in result["plan"]] == [step for step in steps if not step.startswith("write ")]
    assert host.conf.exists() is ("write " in action and not check_mode)


def test_open_ports_twice_changes_nothing_the_second_time(tmp_path):
    host = Host(tmp_path)
    first = host.run({"ufw status": INACTIVE, "ufw show added": NO_RULES}, mode="open_ports")
    assert first["changed"] and first["backend"] == "ufw" and first["ports"] == ["22", "60000-60015", "29500", "8118", "29700"]
    assert host.conf.read_text() == CONF % "60000-60015"
    assert stat.S_IMODE(host.conf.stat().st_mode) == 0o644
    assert first["diff"] == {
        "before": {"ufw": "inactive", "ufw rules": [], "reserved ports": "", str(host.conf): ""},
        "after": {
            "ufw": "active",
            "ufw rules": ["22/tcp", "60000:60015/tcp", "29500/tcp", "8118/tcp", "29700/tcp"],
            "reserved ports": "60000-60015",
            str(host.conf): CONF % "60000-60015",
        },
    }
    host.reserved.write_text("60000-60015\n")  # what the sysctl -w did
    second = host.run({"ufw status": ACTIVE, "ufw show added": ALL_RULES}, mode="open_ports")
    assert (second["changed"], second["plan"], second["action"]) == (False, [], "nothing to do")
    assert second["diff"]["before"] == second["diff"]["after"]


@pytest.mark.parametrize(
    ("reserved", "conf", "plan", "conf_after"),
    [
        ("1000-1010", None, [SYSCTL + "1000-1010,60000-60015"], "1000-1010,60000-60015"),
        ("59000-60005", CONF % "59000-60005", [SYSCTL + "59000-60015"], "59000-60015"),
        ("1000,60000-60100", None, [], "1000,60000-60100"),  # reserved already: only persisted
        ("60000-60015", "# edited by hand\n", [], "60000-60015"),
        ("60000-60015", CONF % "60000-60015", [], None),
    ],
)
def test_the_reservation_keeps_what_is_reserved_and_is_persisted(tmp_path, reserved, conf, plan, conf_after):
    host = Host(tmp_path, reserved=reserved, conf=conf)
    result = host.run({"ufw status": ACTIVE, "ufw show added": ALL_RULES}, mode="open_ports")
    assert host.runner.calls == ["ufw status", "ufw show added"] + plan
    assert result["changed"] is bool(plan or conf_after)
    assert host.conf.read_text() == CONF % (conf_after or reserved)
    assert ("write %s" % host.conf in result["action"]) is bool(conf_after)


def test_backend_auto_reads_os_release(tmp_path):
    host = Host(tmp_path, os_release='NAME="openEuler"\nID="openEuler"\n')
    result = host.run(FWD_NONE)
    assert result["backend"] == "firewalld" and host.runner.calls[0] == "systemctl is-active firewalld"


# -- failures: each says what to fix, and what ran already


def test_an_unknown_os_fails_before_any_command(tmp_path):
    host = Host(tmp_path, os_release='PRETTY_NAME="Arch Linux"\nID=arch\n')
    error = host.fails({})
    assert error.msg.startswith("no firewall known for Arch Linux (ID=arch, ID_LIKE=); set backend to ufw or firewalld")
    assert "ascend_firewall_mode=none" in error.msg
    assert host.runner.calls == []


def test_no_os_release_fails_naming_the_files(tmp_path):
    host = Host(tmp_path)
    host.os_release.unlink()
    error = host.fails({})
    assert "cannot tell the OS: none of" in error.msg and "os-release exists" in error.msg


def test_bad_ports_fail_before_any_command(tmp_path):
    host = Host(tmp_path)
    error = host.fails({}, mode="open_ports", extra_ports=["9010-9000"])
    assert (
        error.msg
        == "bad ports: extra_ports: 9010-9000 runs backwards (write 9000-9010); ports are numbers 1-65535 or ranges like 9000-9010"
    )
    assert host.runner.calls == []


@pytest.mark.parametrize(
    ("backend", "answers", "message"),
    [
        ("ufw", {"ufw status": MISSING}, "ufw is not installed; install it (apt-get install ufw) or use mode=disable"),
        ("firewalld", FWD_NONE, "firewalld is not installed; install it (dnf install firewalld) or use mode=disable"),
    ],
)
def test_open_ports_needs_a_firewall(tmp_path, backend, answers, message):
    host = Host(tmp_path)
    error = host.fails(answers, mode="open_ports", backend=backend)
    assert error.msg.startswith(message) and "(role: ascend_firewall_mode=disable)" in error.msg
    assert not error.details["changed"]


def test_a_failing_command_is_named_with_its_stderr_and_what_already_ran(tmp_path):
    host = Host(tmp_path)
    answers = {"ufw status": INACTIVE, "ufw show added": NO_RULES, "ufw --force enable": (1, "", "ERROR: problem running ufw-init\n")}
    error = host.fails(answers, mode="open_ports")
    assert error.msg == "`ufw --force enable` failed (rc 1): ERROR: problem running ufw-init; already ran: " + UFW_ALL
    assert error.details["cmd"] == ["ufw", "--force", "enable"] and error.details["changed"] is True
    assert [" ".join(argv) for argv in error.details["ran"]] == UFW_ALL.split("; ")
    assert host.runner.calls[-1] == "ufw --force enable"  # nothing after it
    assert not host.conf.exists()


@pytest.mark.parametrize(
    ("answers", "euid", "message"),
    [
        (
            {"ufw status": (1, "", "ERROR: You need to be root to run this script\n")},
            1000,
            "`ufw status` failed (rc 1): ERROR: You need to be root to run this script"
            " - this runs as uid 1000; the firewall needs root (become: true); nothing was changed",
        ),
        ({"ufw status": (124, "", "")}, 0, "`ufw status` timed out after 120 s: no output; nothing was changed"),
        (
            {"ufw status": PermissionError(13, "Permission denied")},
            0,
            "`ufw status` could not start (Permission denied); nothing was changed",
        ),
    ],
)
def test_a_failing_read_changes_nothing(tmp_path, answers, euid, message):
    host = Host(tmp_path)
    assert host.fails(answers, euid=euid).msg == message


@pytest.mark.parametrize(
    ("answers", "message"),
    [
        (
            {"systemctl is-active firewalld": (1, "", "System has not been booted with systemd as init system (PID 1). Can't operate.\n")},
            "`systemctl is-active firewalld` failed (rc 1): System has not been booted with systemd",
        ),
        (dict(FWD_UP, **{"systemctl is-enabled firewalld": (4, "", "bad\n")}), "`systemctl is-enabled firewalld` failed (rc 4): bad"),
        ({"systemctl is-active firewalld": MISSING}, "`systemctl is-active firewalld` could not start (No such file or directory)"),
    ],
)
def test_systemctl_answers_outside_its_exit_codes_fail(tmp_path, answers, message):
    host = Host(tmp_path)
    assert host.fails(answers, backend="firewalld").msg.startswith(message)


def test_a_failed_start_stops_before_reading_the_ports(tmp_path):
    host = Host(tmp_path)
    answers = dict(FWD, **{"systemctl enable --now firewalld": (1, "", "Failed to enable unit: Unit file firewalld.service is masked.\n")})
    error = host.fails(answers, backend="firewalld", mode="open_ports")
    assert (
        error.msg
        == "`systemctl enable --now firewalld` failed (rc 1): Failed to enable unit: Unit file firewalld.service is masked.; nothing was changed"
    )
    assert host.runner.calls[-1] == "systemctl enable --now firewalld"


def test_a_sysctl_file_that_cannot_be_written_is_named_after_the_commands_that_ran(tmp_path):
    host = Host(tmp_path, reserved="60000-60015")
    error = host.fails(
        {"ufw status": ACTIVE, "ufw show added": ALL_RULES}, mode="open_ports", sysctl_file=str(tmp_path / "no-dir" / "x.conf")
    )
    assert error.msg.startswith("cannot write %s (No such file or directory)" % (tmp_path / "no-dir" / "x.conf"))


def test_a_kernel_without_reserved_ports_says_how_to_go_without(tmp_path):
    host = Host(tmp_path)
    host.reserved.unlink()
    error = host.fails({"ufw status": ACTIVE, "ufw show added": ALL_RULES}, mode="open_ports")
    assert "does not exist (this kernel cannot reserve ports); set reserve_hccl_ports=false" in error.msg
