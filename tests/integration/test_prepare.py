"""playbooks/prepare.yml on the simulated local 2 x 8 cluster: facts -> device IPs -> firewall
(mode none: this machine's firewall is never touched) -> net_health -> rank table."""

from __future__ import annotations

import json

from tests.helpers.ansible_cli import run_playbook

from .conftest import SIM_INVENTORY

PREPARE = "playbooks/prepare.yml"
PLAN = {
    "ascend_firewall_mode": "none",
    "ascend_device_ip_layout": "amp",
    "ascend_device_ip_networks": ["198.18.0.0/24"],
    "ascend_device_ip_first_host": 11,
    "ascend_device_ip_gateway_host": 1,
}


def state(cluster) -> dict:
    return {s.name: s.show() for s in cluster.servers}


def test_a_fresh_cluster_is_prepared_in_one_run_and_the_second_changes_nothing(sim_cluster):
    cluster = sim_cluster(preset_ips=False)
    extra = {**cluster.inventory_vars, **PLAN}
    first = run_playbook(PREPARE, SIM_INVENTORY, extra_vars=extra, env={"ANSIBLE_STDOUT_CALLBACK": "ascend.cluster.compact"})
    assert first.rc == 0, first
    assert first.stdout.splitlines()[-2].startswith("  prepare: device IPs changed on 2 server(s); net_health: 16/16 devices OK"), first
    table = json.loads((cluster.root / "server1" / "etc" / "rank_table.json").read_text())
    assert [d["device_ip"] for d in table["server_list"][1]["device"]] == [f"198.18.0.{19 + d}" for d in range(8)]
    report = json.loads((cluster.root / "controller" / "net_health.json").read_text())
    assert {k: v for k, v in report["rows"][-1].items() if k in ("server", "device", "ip", "status")} == {
        "server": "server1", "device": 7, "ip": "198.18.0.26/24", "status": "ok"
    }  # fmt: skip
    assert report["ok"] and report["line"] in first.stdout
    assert "server0  none  not checked (mode none)  nothing to do" in first.stdout
    second = run_playbook(PREPARE, SIM_INVENTORY, extra_vars=extra)
    assert second.rc == 0 and second.changed() == 0, second


def test_check_diff_shows_the_planned_ips_and_changes_nothing(sim_cluster):
    cluster = sim_cluster(preset_ips=False)
    before = state(cluster)
    result = run_playbook(PREPARE, SIM_INVENTORY, extra_vars={**cluster.inventory_vars, **PLAN}, check=True, diff=True)
    assert result.rc == 0, result
    assert '+        "address": "198.18.0.26",' in result.stdout  # server1 device 7, planned
    # the health table shows what this run planned, not "no IP - run the device IP stage"
    assert "IP planned" in result.stdout and "no device IP; run the device IP stage" not in result.stdout, result
    assert state(cluster) == before
    assert not (cluster.root / "server0" / "etc" / "rank_table.json").exists()


def test_each_stage_has_its_tag(sim_cluster):
    cluster = sim_cluster()
    result = run_playbook(PREPARE, SIM_INVENTORY, extra_vars={**cluster.inventory_vars, **PLAN}, tags=["net_health"])
    assert result.rc == 0, result
    assert "ascend.cluster.net_health : Show the cluster's parameter plane" in result.stdout
    tasks = [line for line in result.stdout.splitlines() if line.startswith("TASK [") and "Validating arguments" not in line]
    for other in (
        "ascend.cluster.device_ip :",
        "ascend.cluster.firewall :",
        "ascend.cluster.rank_table :",
        "Read every NPU's network state (stage facts)",
    ):
        assert not [t for t in tasks if other in t], tasks  # (argument checks run with every tag)


def test_a_duplicate_ip_in_the_plan_fails_before_any_device_changed(sim_cluster):
    cluster = sim_cluster(preset_ips=False)
    before = state(cluster)
    dup = {**cluster.inventory_vars, **PLAN, "ascend_device_ips": [{"device_id": 0, "address": "198.18.0.11", "netmask": "255.255.255.0"}]}
    result = run_playbook(PREPARE, SIM_INVENTORY, extra_vars=dup)  # every host claims 198.18.0.11 for device 0
    assert result.rc != 0, result
    assert "198.18.0.11" in result.stdout and "planned" in result.stdout
    assert result.changed() == 0
    assert state(cluster) == before
