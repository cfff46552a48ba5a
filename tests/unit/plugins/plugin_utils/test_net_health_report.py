"""The net_health report logic (plugin_utils/_net/net_health.py): one row per device, one problem per
bad device with its hint, symptoms attributed to their cause, and the cluster-wide checks.

Pure Python and fast: a unit test (the role's playbook tests are tests/integration/test_role_net_health.py).
"""

from __future__ import annotations

from typing import Any

import pytest

from ansible_collections.ascend.cluster.plugins.plugin_utils._errors import ClusterSpecError
from ansible_collections.ascend.cluster.plugins.plugin_utils._net.net_health import (
    HINTS,
    health_report,
    netdetect_targets,
)
from tests.helpers.devices import device_facts


def dev(device_id: int, server: int = 1, **changes: Any) -> dict[str, Any]:
    """A healthy device of server ``server`` in 198.19.0.0/24, probing its gateway."""
    return {**device_facts(device_id, f"198.19.0.{server * 10 + device_id}", "255.255.255.0", "198.19.0.254"), **changes}


def cluster(*servers: list[dict[str, Any]], chip: str = "910B") -> list[dict[str, Any]]:
    return [{"host": f"h{i + 1}", "ascend_npu": {"chip": chip, "devices": devices}} for i, devices in enumerate(servers)]


def test_a_healthy_cluster_has_one_ok_row_per_device_and_no_problem() -> None:
    report = health_report(cluster([dev(0), dev(1)], [dev(0, 2), dev(1, 2)]))
    assert report["ok"] and report["problems"] == [] and report["bad"] == []
    assert [(r["server"], r["device"], r["status"]) for r in report["rows"]] == [
        ("h1", 0, "ok"),
        ("h1", 1, "ok"),
        ("h2", 0, "ok"),
        ("h2", 1, "ok"),
    ]
    assert report["rows"][0] == {
        "server": "h1",
        "device": 0,
        "ip": "198.19.0.10/24",
        "link": "UP",
        "health": "Success",
        "netdetect": "198.19.0.254",
        "tls": "off",
        "status": "ok",
    }


@pytest.mark.parametrize(
    ("changes", "status", "hint_words"),
    [
        ({"link": "DOWN", "net_health": "Fault"}, "link DOWN", ["optics/cable", "eth1"]),
        ({"net_health": "Socket fail"}, "Socket fail", ["firewall", "198.19.0.254"]),
        ({"net_health": "Receive timeout"}, "Receive timeout", ["does not answer", "198.19.0.254"]),
        ({"net_health": "Unreachable"}, "Unreachable", ["route/gateway"]),
        ({"net_health": "Init"}, "Init", ["ascend_net_health_retries"]),
        ({"net_health": "Init", "netdetect": ""}, "no netdetect", ["gateway", "peer"]),
        ({"net_health": "Fault"}, "Fault", ["npu-smi"]),
        ({"net_health": "Thread error"}, "Thread error", ["-net_health -g"]),
        ({"device_ip": "", "netmask": ""}, "no IP", ["--tags device_ip"]),
        ({"error": "Command execute failed!"}, "unreadable", ["Command execute failed!", "driver"]),
        ({"stale_conf": True, "stale_keys": ["address"]}, "conf stale", ["hccn.conf", "address"]),
    ],
)
def test_each_bad_device_is_named_with_its_status_and_hint(changes, status, hint_words) -> None:
    report = health_report(cluster([dev(0), dev(1, **changes)]))
    assert report["bad"] == [{"server": "h1", "device": 1, "status": status}]
    assert len(report["problems"]) == 1 and report["problems"][0].startswith(f"h1 device 1: {status} - ")
    for word in hint_words:
        assert word in report["problems"][0]
    assert [r["status"] for r in report["rows"]] == ["ok", status]
    assert not report["ok"]


def test_stale_conf_can_be_ignored() -> None:
    assert health_report(cluster([dev(0, stale_conf=True)]), check_conf=False)["ok"]


def test_a_probe_failing_because_its_peer_is_cut_is_a_symptom_named_with_the_cause() -> None:
    h1 = [dev(0, netdetect="198.19.0.20"), dev(1, netdetect="198.19.0.21", net_health="Receive timeout")]
    h2 = [dev(0, 2, netdetect="198.19.0.10"), dev(1, 2, netdetect="198.19.0.11", link="DOWN", net_health="Fault")]
    report = health_report(cluster(h1, h2))
    assert report["bad"] == [{"server": "h2", "device": 1, "status": "link DOWN"}]
    assert report["problems"] == [
        "h2 device 1: link DOWN - " + HINTS["link_down"].format(device=1) + "; h1 device 1 probing it fail(s) because of it"
    ]
    assert [r["status"] for r in report["rows"]] == ["ok", "target down", "ok", "link DOWN"]


def test_a_probe_of_a_healthy_target_that_fails_is_its_own_problem() -> None:
    h1 = [dev(0, netdetect="198.19.0.20", net_health="Socket fail")]
    report = health_report(cluster(h1, [dev(0, 2, netdetect="198.19.0.10")]))
    assert report["bad"] == [{"server": "h1", "device": 0, "status": "Socket fail"}]


def test_tls_switch_differing_between_devices_names_the_odd_ones() -> None:
    report = health_report(cluster([dev(0), dev(1)], [dev(0, 2), dev(1, 2, tls_switch=True)]))
    assert report["bad"] == []
    assert len(report["problems"]) == 1
    assert report["problems"][0].startswith("cluster: TLS switch differs between devices (on at h2 device 1)")
    assert "-tls -s enable 0" in report["problems"][0]
    assert health_report(cluster([dev(0)], [dev(0, 2, tls_switch=True)]), check_tls=False)["ok"]


def test_devices_without_a_tls_reading_are_not_compared() -> None:
    assert health_report(cluster([dev(0, tls_switch=None)], [dev(0, 2, tls_switch=True)]))["ok"]


def test_a_duplicate_device_ip_across_servers_is_a_cluster_problem_naming_both() -> None:
    report = health_report(cluster([dev(0)], [dev(0, 2, device_ip="198.19.0.10")]))
    assert len(report["problems"]) == 1
    assert "address 198.19.0.10 is planned 2 times: h1 device 0, h2 device 0" in report["problems"][0]
    assert "nothing was changed" not in report["problems"][0]


def test_910a_devices_must_follow_the_smp_pairing() -> None:
    def smp(d: int, third: int) -> dict[str, Any]:
        return dev(d, device_ip=f"198.19.{third}.{100 + d}", gateway="", netdetect=f"198.19.{third}.1")

    good = [smp(d, d % 4) for d in range(8)]
    assert health_report(cluster(good, chip="910A"))["ok"]
    bad = [smp(d, d % 4 if d != 4 else 1) for d in range(8)]
    report = health_report(cluster(bad, chip="910A"))
    assert any("devices 0 and 4 must share a subnet" in p for p in report["problems"])
    assert health_report(cluster(bad, chip="910A"), layout="amp")["ok"]


def test_bad_input_is_refused_with_a_message() -> None:
    with pytest.raises(ClusterSpecError, match="no ascend_npu facts"):
        health_report([{"host": "h1"}])
    with pytest.raises(ClusterSpecError, match="list of hosts"):
        health_report({"h1": {}})  # type: ignore[arg-type]  # the wrong type is the point
    with pytest.raises(ClusterSpecError, match="layout 'ring' is unknown"):
        health_report(cluster([dev(0)]), layout="ring")


def test_hostvars_shape_is_read_too() -> None:
    hostvars = [{"inventory_hostname": "h1", "ansible_facts": {"ascend_npu": {"chip": "910B", "devices": [dev(0)]}}}]
    assert health_report(hostvars)["rows"][0]["server"] == "h1"


def test_hostvars_are_read_through_ansible_facts_only() -> None:
    # hostvars carry ansible_facts; their top-level ascend_npu is the injected copy, which is gone
    # with INJECT_FACTS_AS_VARS off and must not stand in for missing facts.
    injected = {"inventory_hostname": "h1", "ansible_facts": {}, "ascend_npu": {"chip": "910B", "devices": [dev(0)]}}
    with pytest.raises(ClusterSpecError, match="h1: no ascend_npu facts"):
        health_report([injected])
    fresh = dict(injected, ansible_facts={"ascend_npu": {"chip": "910B", "devices": [dev(0), dev(1)]}})
    assert [r["device"] for r in health_report([fresh])["rows"]] == [0, 1]


@pytest.mark.parametrize(
    ("mode", "peer", "expected"),
    [
        ("gateway", [], ["198.19.0.254", "198.19.0.254"]),
        ("peer", [dev(0, 2), dev(1, 2)], ["198.19.0.20", "198.19.0.21"]),
        ("peer", [dev(0, 2)], ["198.19.0.20"]),  # the peer has no device 1: left out, reported later
    ],
)
def test_netdetect_targets_keep_address_and_netmask(mode, peer, expected) -> None:
    targets = netdetect_targets([dev(0), dev(1), dev(2, device_ip="", netmask="")], mode, peer)
    assert [t["netdetect"] for t in targets] == expected
    assert targets[0] == {"device_id": 0, "address": "198.19.0.10", "netmask": "255.255.255.0", "netdetect": expected[0]}


def test_netdetect_targets_skip_devices_without_a_gateway_and_refuse_unknown_modes() -> None:
    assert netdetect_targets([dev(0, gateway="")], "gateway") == []
    with pytest.raises(ClusterSpecError, match="use gateway or peer"):
        netdetect_targets([dev(0)], "keep")


def planned(device_id: int, address: str, changes: tuple = ("ip", "gateway")) -> dict[str, Any]:
    """One device of the device IP stage's registered hccn_config result (device_ip_result.devices)."""
    return {"device_id": device_id, "changes": list(changes), "after": {"address": address, "netmask": "255.255.255.0"}}


FRESH: dict[str, Any] = {"device_ip": None, "netmask": None, "gateway": None, "netdetect": None, "net_health": "Init"}


def test_check_mode_shows_the_ips_the_same_run_planned_instead_of_no_ip() -> None:
    servers = cluster([dev(0, **FRESH), dev(1, **FRESH)], [dev(0, 2, **FRESH)])
    servers[0]["device_ip_result"] = {"changed": True, "devices": [planned(0, "198.19.0.10"), planned(1, "198.19.0.11")]}
    # h2's stage planned nothing for its device (it failed, or another play): still "no IP"
    report = health_report(servers, check_mode=True)
    assert [(r["server"], r["device"], r["ip"], r["status"]) for r in report["rows"]] == [
        ("h1", 0, "198.19.0.10/24", "IP planned"),
        ("h1", 1, "198.19.0.11/24", "IP planned"),
        ("h2", 0, None, "no IP"),
    ]
    assert report["problems"] == [f"h2 device 0: no IP - {HINTS['no_ip']}"]


def test_planned_ips_count_only_in_check_mode_and_only_for_devices_without_one() -> None:
    servers = cluster([dev(0, **FRESH), dev(1, net_health="Init")])
    servers[0]["device_ip_result"] = {"devices": [planned(0, "198.19.0.10"), planned(1, "198.19.0.99"), planned(2, "198.19.0.12")]}
    applied = health_report(servers)  # a real run: what the devices say is the truth
    assert [r["status"] for r in applied["rows"]] == ["no IP", "Init"]
    checked = health_report(servers, check_mode=True)
    assert [(r["ip"], r["status"]) for r in checked["rows"]] == [("198.19.0.10/24", "IP planned"), ("198.19.0.11/24", "Init")]
    servers[0]["device_ip_result"] = {"devices": [planned(0, "198.19.0.10", changes=("gateway",))]}  # no address change planned
    assert health_report(servers, check_mode=True)["rows"][0]["status"] == "no IP"


def test_the_stale_conf_hint_names_the_configured_file_and_the_stage_that_rewrites_it() -> None:
    servers = cluster([dev(0, stale_conf=True, stale_keys=["address", "netmask"])])
    servers[0]["ascend_npu"]["hccn_conf"] = "/srv/driver/hccn.conf"
    assert health_report(servers)["problems"] == [
        "h1 device 0: conf stale - /srv/driver/hccn.conf disagrees with the device on address, netmask; the device is "
        "right: run prepare.yml --tags device_ip, which sets those values again so that hccn_tool rewrites the file"
    ]


def test_the_report_needs_no_netaddr(monkeypatch) -> None:
    """Its checks are module_utils/_hccn/ip_rules's (standard library), the smp layout check included."""
    from ansible_collections.ascend.cluster.plugins.plugin_utils._net import ip_plan as _ip_plan

    monkeypatch.setattr(_ip_plan, "netaddr", None)
    report = health_report(cluster([dev(0, netmask="24"), dev(1)]))
    assert report["ok"] and report["rows"][0]["ip"] == "198.19.0.10/24"


def test_an_unclear_chip_fails_the_layout_check_closed_naming_the_server_and_line() -> None:
    """Issue 33 item 4: the auto layout needs the chip (smp on 910A); where hccn_facts could not tell it, the report
    names the server and line instead of checking no layout; a layout given by name is checked as before."""
    servers = cluster([dev(0), dev(1)], [dev(0, 2), dev(1, 2)], chip=None)  # type: ignore[arg-type]
    servers[1]["ascend_npu"]["chip_problem"] = "npu-smi info's Name column '910B' (line '| 0     910B | OK |') ..."
    report = health_report(servers)
    assert not report["ok"]
    assert report["problems"] == [
        "cluster: the chip of a server is unclear, so its device IP layout (smp on 910A, amp on A2/A3) was not checked - "
        "h2: npu-smi info's Name column '910B' (line '| 0     910B | OK |') .... Check npu-smi info there, or name the "
        "layout (ascend_net_health_layout=smp or amp)"
    ]
    assert health_report(servers, layout="amp")["ok"]


def test_a_field_hccn_facts_could_not_read_refuses_the_device_naming_the_field_and_the_answer() -> None:
    # hccn_facts leaves an unreadable answer's fields None and keeps the answer in `unparsed` (docs/real-outputs.md)
    unread = dev(1, link=None, unparsed={"link": "link status: ???"})
    report = health_report(cluster([dev(0), unread]))
    assert not report["ok"] and report["bad"] == [{"server": "h1", "device": 1, "status": "unreadable"}]
    assert report["problems"] == [
        "h1 device 1: unreadable - link status unknown: `hccn_tool -i 1 -link -g` printed 'link status: ???', which this "
        "collection cannot read; check the driver version, and report the output (docs/real-outputs.md)"
    ]


def test_an_unknown_tls_switch_fails_the_cluster_closed_naming_the_device_and_the_answer() -> None:
    unread = dev(0, 2, tls_switch=None, unparsed={"tls": "tls status: enabled"})
    report = health_report(cluster([dev(0)], [unread]))
    assert not report["ok"] and report["bad"] == []
    [problem] = report["problems"]
    assert problem.startswith("cluster: h2 device 0: TLS switch unknown: `hccn_tool -i 0 -tls -g` printed 'tls status: enabled'")
    assert health_report(cluster([dev(0)], [unread]), check_tls=False)["ok"]
