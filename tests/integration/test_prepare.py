"""playbooks/prepare.yml on the simulated local 2 x 8 cluster: facts -> device IPs -> firewall
(mode none: this machine's firewall is never touched) -> net_health -> rank table."""

from __future__ import annotations

import json
from collections.abc import Sequence

import pytest

from tests.helpers.ansible_cli import run_playbook
from tests.helpers.runs import snapshot

from .conftest import SIM_INVENTORY

# prepare's health report for CI (docs/summaries.md): rewritten by every health check, a report, not state
REPORTS = ("controller",)

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


def assert_refused_unchanged(result, message: str, cluster, before) -> None:
    """``result`` failed with ``message`` and left every server as ``before`` (``(snapshot, state)``) showed it."""
    assert result.rc != 0, result
    assert message in result.stdout, result
    assert result.changed() == 0, result
    assert (snapshot(cluster), state(cluster)) == before


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
    # a common quiet setting (ok results not printed): the health table and the summary line still are, once
    quiet = {"ANSIBLE_DISPLAY_OK_HOSTS": "false", "ANSIBLE_DISPLAY_SKIPPED_HOSTS": "false"}
    second = run_playbook(PREPARE, SIM_INVENTORY, extra_vars=extra, env=quiet)
    assert second.rc == 0 and second.changed() == 0, second
    assert second.stdout.count("SERVER   DEVICE  IP ") == 1 and second.stdout.count("prepare: device IPs changed on 0 server(s);") == 1, (
        second
    )


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
    for other in ("ascend.cluster.device_ip :", "ascend.cluster.firewall :", "ascend.cluster.rank_table :"):
        assert not [t for t in tasks if other in t], tasks  # (argument checks run with every tag)
    # the facts are read with every tag (an unreachable server is refused before any stage), and only once
    read = "TASK [Read every NPU's network state (a server that cannot be reached or read is found here)] ***"
    again = "TASK [ascend.cluster.net_health : Read every NPU's network state from the devices (with the TLS switch)] ***"
    results = {task: sorted(result.stdout.partition(task)[2].split("\n\n")[0].split()) for task in (read, again)}
    assert results == {read: ["[server0]", "[server1]", "ok:", "ok:"], again: ["[server0]", "[server1]", "skipping:", "skipping:"]}, result


def test_a_duplicate_ip_in_the_plan_fails_before_any_device_changed(sim_cluster):
    cluster = sim_cluster(preset_ips=False)
    before = state(cluster)
    dup = {**cluster.inventory_vars, **PLAN, "ascend_device_ips": [{"device_id": 0, "address": "198.18.0.11", "netmask": "255.255.255.0"}]}
    result = run_playbook(PREPARE, SIM_INVENTORY, extra_vars=dup)  # every host claims 198.18.0.11 for device 0
    assert result.rc != 0, result
    assert "198.18.0.11" in result.stdout and "planned" in result.stdout
    assert result.changed() == 0
    assert state(cluster) == before


def test_the_stale_conf_hint_leads_to_a_fix_that_works(sim_cluster):
    """Issue 13 item 5: the hint names the configured hccn.conf and its command rewrites the file from the device."""
    cluster = sim_cluster(preset_ips=False)
    extra = {**cluster.inventory_vars, **PLAN}
    assert run_playbook(PREPARE, SIM_INVENTORY, extra_vars=extra).rc == 0
    server0 = cluster["server0"]
    server0.fault("stale-conf", "--device", "1")  # address_1 in the file now disagrees with the device (198.18.0.12)
    assert "address_1=198.18.0.113" in server0.hccn_conf.read_text()
    before = (snapshot(cluster, skip=REPORTS), state(cluster))

    # the health stage reports it, naming the file this host uses (not /etc/hccn.conf) and the stage that fixes it
    found = run_playbook(PREPARE, SIM_INVENTORY, extra_vars=extra, tags=["net_health"])
    assert found.rc != 0, found
    hint = f"server0 device 1: conf stale - {server0.hccn_conf} disagrees with the device on address"
    assert hint in found.stdout and "run prepare.yml --tags device_ip" in found.stdout, found
    assert (snapshot(cluster, skip=REPORTS), state(cluster)) == before

    # the hint's command, in check mode with diff: shows the set and the file it leaves, changes nothing
    checked = run_playbook(PREPARE, SIM_INVENTORY, extra_vars=extra, tags=["device_ip"], check=True, diff=True)
    assert checked.rc == 0 and checked.changed("server0") == 1 and checked.changed("server1") == 0, checked
    assert "-address_1=198.18.0.113" in checked.stdout and "+address_1=198.18.0.12" in checked.stdout, checked
    assert (snapshot(cluster, skip=REPORTS), state(cluster)) == before

    # for real: hccn_tool rewrites the line (the device keeps its address), and prepare passes again
    fixed = run_playbook(PREPARE, SIM_INVENTORY, extra_vars=extra, tags=["device_ip"])
    assert fixed.rc == 0 and fixed.changed("server0") == 1, fixed
    assert "address_1=198.18.0.12\n" in server0.hccn_conf.read_text() and "198.18.0.113" not in server0.hccn_conf.read_text()
    assert state(cluster)["server0"]["devices"]["1"]["ip"] == "198.18.0.12"
    again = run_playbook(PREPARE, SIM_INVENTORY, extra_vars=extra)
    assert again.rc == 0 and again.changed() == 0, again


def explicit_inventory(tmp_path, server0_device0: dict, server1_more: Sequence[dict] = ()) -> str:
    """The simulated cluster's inventory with explicit ascend_device_ips per server (198.18.0.11-26/24, gateway .1).

    ``server0_device0`` changes server0's device 0; ``server1_more`` adds entries to server1's list.
    """
    import shutil

    root = tmp_path / "explicit"
    (root / "group_vars").mkdir(parents=True)
    shutil.copy(SIM_INVENTORY.parent / "group_vars" / "ascend.yml", root / "group_vars" / "ascend.yml")
    hosts = {}
    for index, name in enumerate(("server0", "server1")):
        devices = [
            {"device_id": d, "address": f"198.18.0.{11 + index * 8 + d}", "netmask": "255.255.255.0", "gateway": "198.18.0.1"}
            for d in range(8)
        ]
        if index == 0:
            devices[0] = {**devices[0], **server0_device0}
        else:
            devices += list(server1_more)
        hosts[name] = {"ascend_server_id": f"127.0.1.{index + 1}", "ascend_device_ips": devices}
    (root / "hosts.yml").write_text(json.dumps({"ascend": {"hosts": hosts}}))
    return str(root / "hosts.yml")


@pytest.mark.parametrize(
    "device0, health_mode, message",
    [
        # a netdetect target the device cannot reach: hccn_tool would accept it, net_health fail after the change
        (
            {"gateway": "", "netdetect": "198.19.5.1"},
            "keep",
            "server0 device 0: netdetect 198.19.5.1 is outside the device subnet 198.18.0.0/24 and the plan gives the device "
            "no gateway to reach it; plan a gateway in 198.18.0.0/24, or a netdetect target inside it",
        ),
        # the plan's own target, which the health stage (peer) would replace silently
        (
            {"netdetect": "198.18.0.1"},
            "peer",
            "server0 device 0: the plan's netdetect 198.18.0.1 would be replaced by 198.18.0.19 (net_health netdetect=peer); "
            "drop netdetect from the plan, or keep the plan's targets with ascend_net_health_netdetect=keep",
        ),
    ],
    ids=["netdetect outside the subnet, no gateway", "netdetect replaced under peer"],
)
def test_a_netdetect_the_plan_check_refuses_changes_nothing(sim_cluster, tmp_path, device0, health_mode, message):
    """Issue 13 item 6: refused by the plan check, before any device, hccn.conf or rank table changed."""
    cluster = sim_cluster(preset_ips=False)
    before = (snapshot(cluster), state(cluster))
    extra = {**cluster.inventory_vars, "ascend_firewall_mode": "none", "ascend_net_health_netdetect": health_mode}
    result = run_playbook(PREPARE, explicit_inventory(tmp_path, device0), extra_vars=extra)
    assert_refused_unchanged(result, "the device IP plan has 1 problem(s), nothing was changed: " + message, cluster, before)


def test_a_wrong_stage_input_fails_once_for_every_server_before_any_task(sim_cluster):
    """The roles' argument specs are checked in one controller task (ascend.cluster.role_inputs), not once per host and role."""
    cluster = sim_cluster(preset_ips=False)
    before = state(cluster)
    result = run_playbook(PREPARE, SIM_INVENTORY, extra_vars={**cluster.inventory_vars, **PLAN, "ascend_firewall_mode": "off"})
    assert result.rc != 0, result
    assert "firewall: value of ascend_firewall_mode must be one of: disable, open_ports, none, got: off (server0, server1)" in result.stdout
    prepare_play = result.stdout.partition("PLAY [Prepare the NPU servers")[2]
    assert "Read every NPU's network state" not in prepare_play and "Validating arguments" not in prepare_play, result
    assert result.changed() == 0 and state(cluster) == before


def test_a_plan_naming_a_device_one_server_lacks_changes_no_server(sim_cluster, tmp_path):
    """Issue 25 item 2: server1 (8 devices) was refused "before any change" by its own hccn_config, after server0 changed."""
    cluster = sim_cluster(preset_ips=False)
    before = (snapshot(cluster), state(cluster))
    device9 = {"device_id": 9, "address": "198.18.0.29", "netmask": "255.255.255.0", "gateway": "198.18.0.1"}
    extra = {**cluster.inventory_vars, "ascend_firewall_mode": "none"}
    result = run_playbook(PREPARE, explicit_inventory(tmp_path, {}, [device9]), extra_vars=extra)
    message = (
        "the device IP plan has 1 problem(s), nothing was changed: server1: the plan sets device 9, which server1 does not "
        "have (its devices are 0-7, as hccn_facts read them); plan only the devices it has (its ascend_device_ips, or "
        "ascend_device_ip_device_count)"
    )
    assert_refused_unchanged(result, message, cluster, before)


def test_a_server_that_cannot_be_reached_is_refused_before_any_server_changes(sim_cluster, unreachable_inventory):
    """Issue 25 item 1: prepare went on without server1 and changed server0 (its device IPs, netdetect targets, rank table).

    The test bed shows the rest (allow_partial=true over real SSH: tests/testbed/test_prepare.py).
    """
    cluster = sim_cluster(preset_ips=False)
    before = (snapshot(cluster), state(cluster))
    result = run_playbook(PREPARE, unreachable_inventory, extra_vars={**cluster.inventory_vars, **PLAN})
    assert "UNREACHABLE!" in result.stdout, result
    message = (
        "server(s) server1 could not be reached or read (the error is above), and the others would be prepared around them "
        "(netdetect targets, rank table): bring them back, leave them out with --limit, or prepare the others with "
        "-e allow_partial=true. Nothing was changed or started."
    )
    assert_refused_unchanged(result, message, cluster, before)
