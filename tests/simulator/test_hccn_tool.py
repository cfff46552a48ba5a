"""hccn_tool: every command and error of ../shared/ascend-reference.md section 1, byte for byte.

Expected strings are copied from the reference (and, where it is silent, from the open-sourced
tool, see docs/simulator.md "Sources").
"""

from __future__ import annotations

import re

import pytest

from tests.simulator.simhelpers import BIN, run

OK = "Cmd executed successfully!\n"
IP_HELP = (
    "[ hccn_tool -i devid -ip ] needs the following parameters:\n"
    "   [-s]                 : set ip cfg \n"
    "       address %s       : set IPv4 ip address, such as x.x.x.x\n"
    "       netmask %s       : set IPv4 ip netmask, such as x.x.x.x\n"
    "   [-g]                 : get ip address and netmask/prefix_length \n"
    "\n"
)


def expect(proc, rc, stdout="", stderr=""):
    assert (proc.returncode, proc.stdout, proc.stderr) == (rc, stdout, stderr)


# --- get commands ----------------------------------------------------------------------------


def test_ip_get_prints_reference_format(host):
    host.set_ip(0, "192.168.100.101")
    expect(host.hccn("-i", "0", "-ip", "-g"), 0, "ipaddr:192.168.100.101\nnetmask:255.255.255.0\n")


def test_ip_get_without_ip(host):
    expect(host.hccn("-i", "3", "-ip", "-g"), 13, stderr="Get ipconf failed, because no ip was preset there!\n")


def test_gateway_get(host):
    host.set_ip(0, "192.168.100.101")
    assert host.ok("-i", "0", "-gateway", "-s", "gateway", "192.168.100.1") == OK
    expect(host.hccn("-i", "0", "-gateway", "-g"), 0, "default gateway:192.168.100.1, Iface:eth0\n")


def test_gateway_iface_is_the_device(host):
    host.set_ip(5, "192.168.105.101")
    host.ok("-i", "5", "-gateway", "-s", "gateway", "192.168.105.1")
    expect(host.hccn("-i", "5", "-gateway", "-g"), 0, "default gateway:192.168.105.1, Iface:eth5\n")


def test_gateway_get_without_gateway(host):
    host.set_ip(0, "192.168.100.101")
    expect(host.hccn("-i", "0", "-gateway", "-g"), 2, stderr="Get gateway failed, because no gateway was preset there!\n")


def test_netdetect_get_unset_and_set(host):
    expect(host.hccn("-i", "0", "-netdetect", "-g"), 0, "netdetect addr: 0.0.0.0\n")
    host.set_ip(0, "192.168.100.101")
    assert host.ok("-i", "0", "-netdetect", "-s", "address", "192.168.100.1") == OK
    expect(host.hccn("-i", "0", "-netdetect", "-g"), 0, "netdetect addr: 192.168.100.1\n")


def test_netdetect_get_old_driver_label(make_host):
    old = make_host("old", extra=("--driver-variant", "old"))
    old.ok("-i", "1", "-netdetect", "-s", "address", "192.168.100.1")
    expect(old.hccn("-i", "1", "-netdetect", "-g"), 0, "netdetect address: 192.168.100.1\n")


def test_net_health_init_without_netdetect(host):
    expect(host.hccn("-i", "0", "-net_health", "-g"), 0, "net health status: Init\n")


def test_link_get(host):
    expect(host.hccn("-i", "0", "-link", "-g"), 0, "link status: UP\n")
    host.fault("link", "--device", "0", "--down")
    expect(host.hccn("-i", "0", "-link", "-g"), 0, "link status: DOWN\n")


def test_tls_get(host):
    expect(
        host.hccn("-i", "0", "-tls", "-g"),
        0,
        "dev_id:0, tls switch[0](0:disable, 1:enable), tls preconfigured[1](0:non-preset, 1:preset), tls alarm time threshold[60]days\n",
    )


def test_mac_get(host):
    proc = host.hccn("-i", "2", "-mac", "-g")
    assert proc.returncode == 0 and proc.stderr == ""
    assert re.fullmatch(r"mac addr: ([0-9a-f]{2}:){5}[0-9a-f]{2}\n", proc.stdout)
    assert host.hccn("-i", "3", "-mac", "-g").stdout != proc.stdout


def test_ping_success(make_host):
    a, b = make_host("a"), make_host("b")
    a.set_ip(0, "192.168.100.101")
    b.set_ip(0, "192.168.100.111")
    proc = a.hccn("-i", "0", "-ping", "-g", "address", "192.168.100.111")
    assert proc.returncode == 0 and proc.stderr == ""
    lines = proc.stdout.splitlines(keepends=True)
    assert lines[0] == "device 0 PING 192.168.100.111\n"
    for seq, line in enumerate(lines[1:4]):
        assert re.fullmatch(r"recv seq=%d,time=0\.\d{6}ms\n" % seq, line)
    assert lines[4:] == ["3 packets transmitted, 3 received, 0.00% packet loss\n"]


def test_ping_loss_fails(host):
    host.set_ip(0, "192.168.100.101")
    expect(
        host.hccn("-i", "0", "-ping", "-g", "address", "192.168.100.222"),
        1,
        "device 0 PING 192.168.100.222\n"
        "recv time out seq=0\nrecv time out seq=1\nrecv time out seq=2\n"
        "3 packets transmitted, 0 received, 100.00% packet loss\n",
        "Command execute failed!\n",
    )


def test_ping_accepts_pkt(make_host):
    a, b = make_host("a"), make_host("b")
    a.set_ip(1, "10.0.0.1")
    b.set_ip(1, "10.0.0.2")
    assert a.hccn("-i", "1", "-ping", "-g", "address", "10.0.0.2", "pkt", "1024").returncode == 0


# --- set commands ----------------------------------------------------------------------------


def test_ip_set_prints_success_only(host):
    expect(host.hccn("-i", "0", "-ip", "-s", "address", "192.168.100.101", "netmask", "255.255.255.0"), 0, OK)


def test_ip_set_keywords_in_any_order(host):
    expect(host.hccn("-i", "0", "-ip", "-s", "netmask", "255.255.0.0", "address", "10.1.2.3"), 0, OK)
    expect(host.hccn("-i", "0", "-ip", "-g"), 0, "ipaddr:10.1.2.3\nnetmask:255.255.0.0\n")


@pytest.mark.parametrize(
    "address, netmask",
    [
        ("192.168.100.256", "255.255.255.0"),
        ("192.168.100", "255.255.255.0"),
        ("abc", "255.255.255.0"),
        ("0.0.0.0", "255.255.255.0"),
        ("127.0.0.5", "255.0.0.0"),
        ("224.0.0.9", "255.255.255.0"),
        ("192.168.100.0", "255.255.255.0"),
        ("192.168.100.255", "255.255.255.0"),
        ("192.168.100.101", "255.0.255.0"),
        ("192.168.100.101", "0.0.0.0"),
    ],
)
def test_ip_set_invalid(host, address, netmask):
    expect(
        host.hccn("-i", "0", "-ip", "-s", "address", address, "netmask", netmask), 6, stderr="The ip address you configured is invalid!\n"
    )
    assert host.conf_lines() == []


def test_ip_set_conflict_with_other_device(host):
    host.set_ip(0, "192.168.100.101")
    expect(
        host.hccn("-i", "1", "-ip", "-s", "address", "192.168.100.101", "netmask", "255.255.255.0"),
        7,
        stderr="The ip address configured is conflicted!\n",
    )
    # setting a device to the address it already has is not a conflict
    expect(host.hccn("-i", "0", "-ip", "-s", "address", "192.168.100.101", "netmask", "255.255.255.0"), 0, OK)


@pytest.mark.parametrize("address", ["192.168.1.10", "192.168.1.199", "192.168.1.250"])
def test_ip_set_rejects_vnic_subnet(host, address):
    expect(
        host.hccn("-i", "0", "-ip", "-s", "address", address, "netmask", "255.255.255.0"),
        7,
        stderr="The ip address configured is conflicted!\n",
    )


def test_gateway_outside_subnet(host):
    host.set_ip(0, "192.168.100.101")
    expect(
        host.hccn("-i", "0", "-gateway", "-s", "gateway", "192.168.101.1"),
        8,
        stderr="The segment of configured gateway doesn't match that of the configured ip adress!\n",
    )


def test_gateway_without_ip(host):
    expect(
        host.hccn("-i", "0", "-gateway", "-s", "gateway", "192.168.101.1"),
        13,
        stderr="Get ipconf failed, because no ip was preset there!\n",
    )


def test_netdetect_rejects_broadcast(host):
    expect(host.hccn("-i", "0", "-netdetect", "-s", "address", "255.255.255.255"), 37, stderr="Can not config broadcast address!\n")
    expect(host.hccn("-i", "0", "-netdetect", "-s", "address", "1.2.3"), 6, stderr="The ip address you configured is invalid!\n")


def test_all_cfg_recovery(host):
    host.conf.write_text("address_2=10.9.8.7\nnetmask_2=255.255.255.0\nnetdetect_2=10.9.8.1\ngateway_2=10.9.8.1\n")
    expect(host.hccn("-a", "-cfg", "recovery"), 0, OK)
    expect(host.hccn("-i", "2", "-ip", "-g"), 0, "ipaddr:10.9.8.7\nnetmask:255.255.255.0\n")
    expect(host.hccn("-i", "2", "-gateway", "-g"), 0, "default gateway:10.9.8.1, Iface:eth2\n")
    expect(host.hccn("-i", "2", "-netdetect", "-g"), 0, "netdetect addr: 10.9.8.1\n")


def test_all_cfg_recovery_without_conf(host):
    host.conf.unlink()
    expect(
        host.hccn("-a", "-cfg", "recovery"),
        29,
        stderr="The hccn.conf can't access, cmd execute failed! pls check the conf file or cmd run permission.\n",
    )


# --- argument errors -------------------------------------------------------------------------


@pytest.mark.parametrize("device", ["8", "99", "123", "x", "-1", "", "\u00b2", "\u0663", " 1"])
def test_bad_device_id(host, device):
    expect(host.hccn("-i", device, "-ip", "-g"), 4, stderr="Get invalid device id.\n")


def test_device_ids_need_not_be_contiguous(make_host):
    h = make_host("sparse", extra=("--device-ids", "0,2,5"))
    expect(h.hccn("-i", "1", "-link", "-g"), 4, stderr="Get invalid device id.\n")
    expect(h.hccn("-i", "5", "-link", "-g"), 0, "link status: UP\n")
    expect(h.hccn("-i", "05", "-link", "-g"), 0, "link status: UP\n")


@pytest.mark.parametrize(
    "args",
    [
        ("-i", "0", "-ip", "-g", "extra"),
        ("-i", "0", "-ip", "-s", "address", "192.168.100.101"),
        ("-i", "0", "-ip", "-s", "address", "192.168.100.101", "netmask", "255.255.255.0", "x"),
        ("-i", "0", "-ip"),
    ],
)
def test_wrong_argument_count(host, args):
    expect(host.hccn(*args), 4, IP_HELP, "The total count of input parameters is wrong!\n")


@pytest.mark.parametrize(
    "args",
    [
        ("-i", "0", "-ip", "-x"),
        ("-i", "0", "-ip", "-s", "addr", "192.168.100.101", "netmask", "255.255.255.0"),
    ],
)
def test_unknown_option(host, args):
    expect(host.hccn(*args), 3, IP_HELP, "Get unknown option!\n")


def test_unknown_option_net_health(host):
    expect(
        host.hccn("-i", "0", "-net_health", "-s"),
        3,
        "[ hccn_tool -i devid -net_health ] needs the following parameters:\n   [-g]        : get net health status\n\n",
        "Get unknown option!\n",
    )


def test_unknown_major_command(host):
    expect(host.hccn("-i", "0", "-bogus", "-g"), 3, stderr="Get invalid major cmd.\nEnter [ hccn_tool -h ] for more details.\n")


def test_invalid_major_type(host):
    expect(
        host.hccn("-x", "0", "-ip", "-g"),
        1,
        stderr='Get invalid major cmd type. The valid major cmd type should be "-a" or "-i".\nEnter [ hccn_tool -h ] for more details.\n',
    )


def test_no_arguments(host):
    expect(host.hccn(), 2, stderr="Get invalid major cmd number. Please check your input.\nEnter [ hccn_tool -h ] for more details.\n")


def test_help(host):
    proc = host.hccn("-h")
    assert proc.returncode == 0 and proc.stderr == ""
    assert "hccn_tool -i devid -ip\n" in proc.stdout and "hccn_tool -a  -cfg\n" in proc.stdout


def test_every_line_ends_in_newline(host):
    host.set_ip(0, "192.168.100.101")
    for args in (
        ("-i", "0", "-ip", "-g"),
        ("-i", "0", "-link", "-g"),
        ("-i", "9", "-ip", "-g"),
        ("-i", "0", "-tls", "-g"),
        ("-i", "0", "-ip", "-x"),
    ):
        proc = host.hccn(*args)
        for text in (proc.stdout, proc.stderr):
            assert text == "" or text.endswith("\n")


def test_missing_state_is_a_simulator_error(tmp_path):
    proc = run([BIN / "hccn_tool", "-i", "0", "-ip", "-g"], env={"ASCEND_SIM_STATE": str(tmp_path / "none")})
    assert proc.returncode == 125
    assert proc.stderr.startswith("ascend-sim: no simulator state in ")


USAGE_ERRORS = {4: "The total count of input parameters is wrong!\n", 3: "Get unknown option!\n"}


@pytest.mark.parametrize(
    "args, rc",
    [
        (("-i", "0", "-gateway"), 4),
        (("-i", "0", "-gateway", "-x"), 3),
        (("-i", "0", "-gateway", "-g", "x"), 4),
        (("-i", "0", "-gateway", "-s", "gateway"), 4),
        (("-i", "0", "-gateway", "-s", "address", "192.168.100.1"), 3),
        (("-i", "0", "-netdetect"), 4),
        (("-i", "0", "-netdetect", "-x"), 3),
        (("-i", "0", "-netdetect", "-g", "x"), 4),
        (("-i", "0", "-netdetect", "-s", "address", "192.168.100.1", "x"), 4),
        (("-i", "0", "-netdetect", "-s", "gateway", "192.168.100.1"), 3),
        (("-i", "0", "-link"), 4),
        (("-i", "0", "-link", "-s"), 3),
        (("-i", "0", "-link", "-g", "x"), 3),  # -link answers words after -g as an unknown option, not a count
        (("-i", "0", "-mac"), 4),
        (("-i", "0", "-mac", "-s"), 3),
        (("-i", "0", "-mac", "-g", "x"), 4),
        (("-i", "0", "-tls"), 4),
        (("-i", "0", "-tls", "-s"), 3),
        (("-i", "0", "-tls", "-g", "x"), 4),
        (("-i", "0", "-cfg"), 4),
        (("-i", "0", "-cfg", "x"), 3),
        (("-i", "0", "-cfg", "recovery", "x"), 4),
        (("-a", "-cfg"), 4),
        (("-a", "-cfg", "x"), 3),
        (("-a", "-cfg", "recovery", "x"), 4),
    ],
)
def test_usage_errors_of_every_command_print_its_help(host, args, rc):
    proc = host.hccn(*args)
    assert (proc.returncode, proc.stderr) == (rc, USAGE_ERRORS[rc])
    assert "needs the following parameters:" in proc.stdout, proc.stdout
