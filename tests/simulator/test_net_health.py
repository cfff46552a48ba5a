"""net_health like hardware: Init, then (after the settle delay) Success or the failure cause."""

from __future__ import annotations

import time

HEALTH = "net health status: %s\n"


def health(h, dev=0):
    proc = h.hccn("-i", str(dev), "-net_health", "-g")
    assert proc.returncode == 0 and proc.stderr == ""
    return proc.stdout


def pair(make_host, settle=0.0):
    a, b = make_host("a", settle=settle), make_host("b", settle=settle)
    a.set_ip(0, "192.168.100.101")
    b.set_ip(0, "192.168.100.111")
    return a, b


def test_init_until_netdetect_is_set(make_host):
    a, _b = pair(make_host)
    assert health(a) == HEALTH % "Init"
    a.ok("-i", "0", "-netdetect", "-s", "address", "192.168.100.111")
    assert health(a) == HEALTH % "Success"


def test_stays_init_for_the_settle_delay(make_host):
    a, _b = pair(make_host, settle=1.5)
    a.ok("-i", "0", "-netdetect", "-s", "address", "192.168.100.111")
    assert health(a) == HEALTH % "Init"
    time.sleep(1.6)
    assert health(a) == HEALTH % "Success"


def test_receive_timeout_when_nobody_answers(make_host):
    a, _b = pair(make_host)
    a.ok("-i", "0", "-netdetect", "-s", "address", "192.168.100.200")
    assert health(a) == HEALTH % "Receive timeout"


def test_gateway_answers(make_host):
    a, _b = pair(make_host)
    a.ok("-i", "0", "-gateway", "-s", "gateway", "192.168.100.1")
    a.ok("-i", "0", "-netdetect", "-s", "address", "192.168.100.1")
    assert health(a) == HEALTH % "Success"


def test_peer_link_down_is_receive_timeout(make_host):
    a, b = pair(make_host)
    a.ok("-i", "0", "-netdetect", "-s", "address", "192.168.100.111")
    b.fault("link", "--device", "0", "--down")
    assert health(a) == HEALTH % "Receive timeout"
    b.fault("link", "--device", "0", "--up")
    assert health(a) == HEALTH % "Success"


def test_own_link_down_is_fault(make_host):
    a, _b = pair(make_host)
    a.ok("-i", "0", "-netdetect", "-s", "address", "192.168.100.111")
    a.fault("link", "--device", "0", "--down")
    assert health(a) == HEALTH % "Fault"


def test_tls_mismatch_is_socket_fail(make_host):
    a, b = pair(make_host)
    a.ok("-i", "0", "-netdetect", "-s", "address", "192.168.100.111")
    b.fault("tls", "--device", "0", "--switch", "1")
    assert health(a) == HEALTH % "Socket fail"
    assert b.ok("-i", "0", "-tls", "-g").startswith("dev_id:0, tls switch[1](0:disable, 1:enable)")
    a.fault("tls", "--device", "0", "--switch", "1")
    assert health(a) == HEALTH % "Success"


def test_injected_unreachable_peer(make_host):
    a, _b = pair(make_host)
    a.ok("-i", "0", "-netdetect", "-s", "address", "192.168.100.111")
    a.fault("unreachable", "--ip", "192.168.100.111")
    assert health(a) == HEALTH % "Receive timeout"
    assert a.hccn("-i", "0", "-ping", "-g", "address", "192.168.100.111").returncode == 1
    a.fault("unreachable", "--ip", "192.168.100.111", "--remove")
    assert health(a) == HEALTH % "Success"


def test_forced_status_with_spaces(make_host):
    a, _b = pair(make_host)
    a.fault("health", "--device", "0", "--status", "Socket fail")
    assert health(a) == "net health status: Socket fail\n"
    a.fault("health", "--device", "0", "--off")
    assert health(a) == HEALTH % "Init"


def test_other_subnet_needs_a_gateway(make_host):
    a, b = make_host("a"), make_host("b")
    a.set_ip(0, "10.0.0.5")
    b.set_ip(0, "10.0.1.5")
    a.ok("-i", "0", "-netdetect", "-s", "address", "10.0.1.5")
    assert health(a) == HEALTH % "Receive timeout"
    a.ok("-i", "0", "-gateway", "-s", "gateway", "10.0.0.1")
    assert health(a) == HEALTH % "Success"


def test_separate_fabrics_do_not_see_each_other(make_host):
    a = make_host("a", shared_fabric=False)
    b = make_host("b", shared_fabric=False)
    a.set_ip(0, "192.168.100.101")
    b.set_ip(0, "192.168.100.111")
    a.ok("-i", "0", "-netdetect", "-s", "address", "192.168.100.111")
    assert health(a) == HEALTH % "Receive timeout"


def test_a3_dies_of_one_npu_do_not_reach_each_other(make_host):
    h = make_host("a3", chip="A3")
    for dev in (0, 1, 2):
        h.set_ip(dev, "10.0.0.%d" % (dev + 10))
    assert h.hccn("-i", "0", "-ping", "-g", "address", "10.0.0.11").returncode == 1
    assert h.hccn("-i", "0", "-ping", "-g", "address", "10.0.0.12").returncode == 0
    h.ok("-i", "1", "-netdetect", "-s", "address", "10.0.0.10")
    assert health(h, 1) == HEALTH % "Receive timeout"
