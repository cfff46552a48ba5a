"""_firewall's parsers and planners, table by table: os-release, the port list, ufw status and
show added, systemctl's answers, firewall-cmd port lists and the reserved-port lists."""

from __future__ import annotations

import os
import stat

import pytest

from ansible_collections.ascend.cluster.plugins.module_utils._host import firewall as fw

ADDED_HEADER = "Added user rules (see 'ufw status' for running firewall):\n"


@pytest.mark.parametrize(
    ("text", "backend"),
    [
        ('PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\nNAME="Debian GNU/Linux"\nID=debian\n', "ufw"),
        ('NAME="Ubuntu"\nID=ubuntu\nID_LIKE=debian\n', "ufw"),
        ('NAME="Linux Mint"\nID=linuxmint\nID_LIKE="ubuntu debian"\n', "ufw"),
        ('NAME="openEuler"\nVERSION="22.03 (LTS-SP3)"\nID="openEuler"\n', "firewalld"),
        ('NAME="Kylin Linux Advanced Server"\nID="kylin"\nVERSION_ID="V10"\n', "firewalld"),
        ('NAME="CentOS Linux"\nID="centos"\nID_LIKE="rhel fedora"\n', "firewalld"),
        ('NAME="Rocky Linux"\nID="rocky"\nID_LIKE="rhel centos fedora"\n', "firewalld"),
        ('NAME="Anolis OS"\nID="anolis"\nID_LIKE="rhel fedora centos"\n', "firewalld"),  # unknown ID, known ID_LIKE
        ("# comment\n\nID='ubuntu'\nnot a field\n", "ufw"),
        ('NAME="Arch Linux"\nID=arch\n', None),
        ("", None),
    ],
)
def test_the_firewall_follows_the_os_family(text, backend):
    assert fw.backend_for_os(fw.parse_os_release(text)) == backend


def test_an_unknown_os_is_described_by_its_name_and_ids():
    fields = fw.parse_os_release('PRETTY_NAME="Arch Linux"\nID=arch\n')
    assert fw.describe_os(fields) == "Arch Linux (ID=arch, ID_LIKE=)"


@pytest.mark.parametrize(
    ("args", "ports"),
    [
        ((22, 60000, 16, [29500, 8118], []), ["22", "60000-60015", "29500", "8118"]),
        ((2222, 60000, 32, [29500], ["6006-6007", "9000"]), ["2222", "60000-60031", "29500", "6006-6007", "9000"]),
        ((22, 60000, 16, [22, 29500], ["29500", "8118"]), ["22", "60000-60015", "29500", "8118"]),  # each once, first place kept
        ((22, 65520, 16, [], []), ["22", "65520-65535"]),
    ],
)
def test_training_ports_ssh_first_each_once(args, ports):
    assert fw.training_ports(*args) == ports


@pytest.mark.parametrize(
    ("args", "problems"),
    [
        ((22, 60000, 0, [], []), ["hccl_port_count 0: HCCL needs at least 1 port"]),
        ((22, 65530, 16, [], []), ["HCCL range (hccl_base_port, hccl_port_count): 65530-65545 is outside 1-65535"]),
        ((0, 60000, 16, [], []), ["ssh_port: 0 is outside 1-65535"]),
        ((22, 60000, 16, [70000], []), ["master_ports: 70000 is outside 1-65535"]),
        (
            (22, 60000, 16, [], ["9010-9000", "tensorboard", " 6006", "1:2"]),
            [
                "extra_ports: 9010-9000 runs backwards (write 9000-9010)",
                "extra_ports: 'tensorboard' is neither a port nor a range",
                "extra_ports: ' 6006' is neither",
                "extra_ports: '1:2' is neither",
            ],
        ),
    ],
)
def test_bad_ports_are_all_named_with_their_option(args, problems):
    with pytest.raises(fw.FirewallError) as caught:
        fw.training_ports(*args)
    assert caught.value.msg.startswith("bad ports: ")
    assert caught.value.msg.endswith("; ports are numbers 1-65535 or ranges like 9000-9010")
    for problem in problems:
        assert problem in caught.value.msg
    assert caught.value.msg.count(": ") == len(problems) + 1


@pytest.mark.parametrize(
    ("out", "active"),
    [
        ("Status: inactive\n", False),
        (
            "Status: active\n\nTo                         Action      From\n--                         ------      ----\n22/tcp  ALLOW  Anywhere\n",
            True,
        ),
        ("Status: active\n", True),
        ("", False),
        ("Statut : actif\n", False),  # a translation is not read as active (the module runs ufw with LC_ALL=C)
    ],
)
def test_ufw_status(out, active):
    assert fw.ufw_active(out) is active


@pytest.mark.parametrize(
    ("out", "rules"),
    [
        (ADDED_HEADER + "(None)\n", []),
        (ADDED_HEADER + "ufw allow 22/tcp\nufw allow 60000:60015/tcp\n", ["22/tcp", "60000:60015/tcp"]),
        (ADDED_HEADER + "ufw allow 22/tcp comment 'ssh'\n", ["22/tcp"]),
        (ADDED_HEADER + "ufw deny 23/tcp\nufw limit 22/tcp\nufw allow 29500/tcp\n", ["29500/tcp"]),
        (ADDED_HEADER + "ufw allow from 10.0.0.0/8 to any port 22\n", ["from 10.0.0.0/8 to any port 22"]),
        ("", []),
    ],
)
def test_ufw_show_added(out, rules):
    assert fw.ufw_allowed(out) == rules


PORTS = ["22", "60000-60015", "29500"]


@pytest.mark.parametrize(
    ("mode", "active", "allowed", "plan"),
    [
        ("disable", True, [], [["ufw", "disable"]]),
        ("disable", False, [], []),
        (
            "open_ports",
            False,
            [],
            [["ufw", "allow", "22/tcp"], ["ufw", "allow", "60000:60015/tcp"], ["ufw", "allow", "29500/tcp"], ["ufw", "--force", "enable"]],
        ),
        ("open_ports", True, ["22/tcp", "29500/tcp"], [["ufw", "allow", "60000:60015/tcp"]]),
        ("open_ports", True, ["29500/tcp", "60000:60015/tcp", "22/tcp"], []),
    ],
)
def test_ufw_plan(mode, active, allowed, plan):
    assert fw.plan_ufw(mode, active, allowed, PORTS) == plan


@pytest.mark.parametrize(
    ("is_active", "is_enabled", "state"),
    [
        ("active\n", "enabled\n", (True, True, True, "firewalld active, enabled")),
        ("inactive\n", "disabled\n", (True, False, False, "firewalld inactive, disabled")),
        ("active\n", "enabled-runtime\n", (True, True, True, "firewalld active, enabled-runtime")),
        ("failed\n", "masked\n", (True, False, False, "firewalld failed, masked")),
        ("inactive\n", "not-found\n", (False, False, False, "firewalld not installed")),
        ("inactive\n", "", (False, False, False, "firewalld not installed")),  # older systemd: only stderr
    ],
)
def test_systemctl_answers(is_active, is_enabled, state):
    got = fw.firewalld_state(is_active, is_enabled)
    assert (got["installed"], got["active"], got["enabled"], got["found"]) == state


@pytest.mark.parametrize(
    ("zone", "saved", "running", "plan"),
    [
        (
            "",
            "",
            "",
            [
                "firewall-cmd --permanent --add-port=22/tcp",
                "firewall-cmd --permanent --add-port=60000-60015/tcp",
                "firewall-cmd --permanent --add-port=29500/tcp",
                "firewall-cmd --add-port=22/tcp",
                "firewall-cmd --add-port=60000-60015/tcp",
                "firewall-cmd --add-port=29500/tcp",
            ],
        ),
        (
            "trusted",
            "22/tcp 8080/udp\n",
            "22/tcp 60000-60015/tcp 29500/tcp\n",
            [
                "firewall-cmd --permanent --zone=trusted --add-port=60000-60015/tcp",
                "firewall-cmd --permanent --zone=trusted --add-port=29500/tcp",
            ],
        ),
        ("public", "22/tcp 60000-60015/tcp 29500/tcp\n", "29500/tcp 22/tcp 60000-60015/tcp\n", []),
    ],
)
def test_firewalld_plan_adds_saved_and_running_separately(zone, saved, running, plan):
    got = fw.plan_firewalld_ports(zone, PORTS, saved.split(), running.split())
    assert [" ".join(argv) for argv in got] == plan
    assert fw.firewalld_list_ports(zone, permanent=True) == ["firewall-cmd"] + (["--zone=" + zone] if zone else []) + [
        "--permanent",
        "--list-ports",
    ]


@pytest.mark.parametrize(
    ("current", "low", "high", "expected"),
    [
        ("", 60000, 60015, (False, "60000-60015")),
        ("\n", 60000, 60015, (False, "60000-60015")),
        ("60000-60015\n", 60000, 60015, (True, "60000-60015")),
        ("1000,60000-60100\n", 60000, 60015, (True, "1000,60000-60100")),
        ("59000-60005\n", 60000, 60015, (False, "59000-60015")),  # overlapping: joined as the kernel joins it
        ("60016-60031\n", 60000, 60015, (False, "60000-60031")),  # adjacent: joined too
        ("60000-60015\n", 60000, 60031, (False, "60000-60031")),  # 16 reserved, 32 wanted
        ("1000-1010\n", 60000, 60031, (False, "1000-1010,60000-60031")),
        ("1000,1002,70\n", 60000, 60000, (False, "70,1000,1002,60000")),
    ],
)
def test_reserved_ports_keep_what_is_reserved_already(current, low, high, expected):
    assert fw.reservation(current, low, high) == expected


def test_a_reserved_port_list_that_is_not_one_is_refused():
    with pytest.raises(ValueError):
        fw.reservation("60000-abc", 60000, 60015)


def test_the_sysctl_file_is_the_roles_text_word_for_word():
    assert fw.sysctl_file_text("1000,60000-60015") == (
        "# Written by the ascend.cluster.firewall role: keep ephemeral ports out of HCCL's host range.\n"
        "net.ipv4.ip_local_reserved_ports = 1000,60000-60015\n"
    )


@pytest.mark.parametrize(
    ("plan", "written", "check_mode", "text"),
    [
        ([], [], False, "nothing to do"),
        ([], [], True, "nothing to do"),
        ([["ufw", "disable"]], [], False, "ran: ufw disable"),
        (
            [["ufw", "allow", "22/tcp"], ["ufw", "--force", "enable"]],
            ["/etc/x.conf"],
            True,
            "would run: ufw allow 22/tcp; ufw --force enable; write /etc/x.conf",
        ),
    ],
)
def test_action_text(plan, written, check_mode, text):
    assert fw.action_text(plan, written, check_mode) == text


def test_files_are_written_atomically_with_the_mode_given(tmp_path):
    path = tmp_path / "60-ascend-hccl-ports.conf"
    path.write_text("old\n")
    os.chmod(path, 0o600)
    old_umask = os.umask(0o077)
    try:
        fw.write_text_atomic(str(path), "new\n", 0o644)
    finally:
        os.umask(old_umask)
    assert path.read_text() == "new\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
    assert [p.name for p in tmp_path.iterdir()] == [path.name]  # no temp file left


def test_a_failed_write_leaves_no_temp_file(tmp_path, monkeypatch):
    def refuse(src, dst):
        raise OSError(30, "Read-only file system")

    monkeypatch.setattr(fw.os, "replace", refuse)
    with pytest.raises(OSError):
        fw.write_text_atomic(str(tmp_path / "f.conf"), "x\n", 0o644)
    assert list(tmp_path.iterdir()) == []
