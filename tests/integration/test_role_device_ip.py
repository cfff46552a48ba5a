"""Role ascend.cluster.device_ip on simulated servers: a real ansible-playbook run, local connection.

Each simulated server is an inventory host whose ``ascend_device_ip_hccn_tool`` points at its own
simulated hccn_tool, so one playbook configures the whole simulated cluster.
"""

from __future__ import annotations

import json
import sys

import pytest

from tests.helpers.ansible_cli import run_playbook

SMP_NETS = ["198.18.100.0/24", "198.18.101.0/24", "198.18.102.0/24", "198.18.103.0/24"]
PLAY = """\
- name: Device IPs
  hosts: all
  gather_facts: false
  roles:
    - ascend.cluster.device_ip
"""
CONFIGURE_TASK = "Set the device IPs, gateways and netdetect addresses"
# The wrapper knows its own state directory; an inherited ASCEND_SIM_STATE must not override it.
ENV = {"ASCEND_SIM_STATE": ""}


def write_bed(tmp_path, cluster, group_vars, host_vars=None):
    """Playbook and inventory (JSON is YAML) for the simulated servers; returns their paths."""
    hosts = {}
    for server in cluster.servers:
        hosts[server.name] = dict(
            # the file this server's hccn_tool writes (hermetic: never this machine's /etc/hccn.conf)
            {
                "ascend_device_ip_hccn_tool": str(server.bin_dir / "hccn_tool"),
                "ascend_device_ip_hccn_conf": str(server.hccn_conf),
                # the role reads each server's devices (npu-smi lists them) to check its plan against them
                "ascend_npu_smi": str(server.bin_dir / "npu-smi"),
            },
            **(host_vars or {}).get(server.name, {}),
        )
    inventory = {
        "all": {
            "vars": dict({"ansible_connection": "local", "ansible_python_interpreter": sys.executable}, **group_vars),
            "hosts": hosts,
        }
    }
    (tmp_path / "inventory.yml").write_text(json.dumps(inventory))
    (tmp_path / "play.yml").write_text(PLAY)
    return tmp_path / "play.yml", tmp_path / "inventory.yml"


def cluster_values(cluster):
    return {
        server.name: {
            int(d): (v.get("ip") or "", v.get("gateway") or "", v.get("netdetect") or "") for d, v in server.show()["devices"].items()
        }
        for server in cluster.servers
    }


SMP_VARS = {
    "ascend_device_ip_layout": "smp",
    "ascend_device_ip_networks": SMP_NETS,
    "ascend_device_ip_gateway_host": 1,
    "ascend_device_ip_chip": "910A",
}


def test_smp_plan_first_run_changes_second_run_does_not(sim_cluster, tmp_path):
    cluster = sim_cluster(servers=2, chip="910A", preset_ips=False)
    play, inventory = write_bed(tmp_path, cluster, SMP_VARS)

    first = run_playbook(play, inventory, env=ENV)
    assert first.rc == 0, first
    assert first.changed("server0") == 1 and first.changed("server1") == 1
    values = cluster_values(cluster)
    # seed 004's numbering (.101/.100 on server0, .111/.110 on server1) on 198.18.100-103.0/24
    assert values["server0"][0] == ("198.18.100.101", "198.18.100.1", "198.18.100.1")
    assert values["server0"][4] == ("198.18.100.100", "198.18.100.1", "198.18.100.1")
    assert values["server1"][3] == ("198.18.103.111", "198.18.103.1", "198.18.103.1")
    assert values["server1"][7] == ("198.18.103.110", "198.18.103.1", "198.18.103.1")

    second = run_playbook(play, inventory, env=ENV)
    assert second.rc == 0 and second.changed() == 0, second
    assert cluster_values(cluster) == values


def test_check_diff_changes_nothing(sim_cluster, tmp_path):
    cluster = sim_cluster(servers=2, chip="910A", preset_ips=False)
    play, inventory = write_bed(tmp_path, cluster, SMP_VARS)
    before = cluster_values(cluster)
    result = run_playbook(play, inventory, check=True, diff=True, env=ENV)
    assert result.rc == 0 and result.changed() == 2, result
    assert cluster_values(cluster) == before
    assert '+        "address": "198.18.101.111",' in result.stdout  # server1 device 1, in the diff


def test_duplicate_ip_fails_before_any_host_changed(sim_cluster, tmp_path):
    cluster = sim_cluster(servers=2, chip="910A", preset_ips=False)
    # server1 lists its own devices, and device 4 repeats server0's device 4 (198.18.100.100)
    explicit = [{"device_id": d, "address": "198.18.%d.%d" % (100 + d % 4, 111 if d < 4 else 110), "netmask": "24"} for d in range(8)]
    explicit[4]["address"] = "198.18.100.100"
    play, inventory = write_bed(tmp_path, cluster, SMP_VARS, {"server1": {"ascend_device_ips": explicit}})
    before = cluster_values(cluster)
    result = run_playbook(play, inventory, env=ENV)
    assert result.rc != 0 and result.failed_hosts(), result
    assert result.changed() == 0 and CONFIGURE_TASK not in result.stdout  # the play stopped for every host
    assert "address 198.18.100.100 is planned 2 times: server0 device 4, server1 device 4" in result.stdout
    assert cluster_values(cluster) == before


def test_explicit_lists_amp_with_peer_netdetect(sim_cluster, tmp_path):
    cluster = sim_cluster(servers=2, chip="910B", preset_ips=False)
    amp = {
        "ascend_device_ip_layout": "amp",
        "ascend_device_ip_networks": ["198.18.8.0/24"],
        "ascend_device_ip_first_host": 10,
        "ascend_device_ip_netdetect": "peer",
    }
    play, inventory = write_bed(tmp_path, cluster, amp)
    result = run_playbook(play, inventory, env=ENV)
    assert result.rc == 0, result
    values = cluster_values(cluster)
    assert [values["server0"][d][0] for d in range(8)] == ["198.18.8.%d" % n for n in range(10, 18)]
    assert values["server1"][2] == ("198.18.8.20", "", "198.18.8.12")  # probes server0's device 2


def test_host_without_plan_fails_everyone(sim_cluster, tmp_path):
    cluster = sim_cluster(servers=2, chip="910B", preset_ips=False)
    explicit = [{"device_id": 0, "address": "198.18.8.10", "netmask": "255.255.255.0"}]
    play, inventory = write_bed(tmp_path, cluster, {}, {"server0": {"ascend_device_ips": explicit}})
    result = run_playbook(play, inventory, env=ENV)
    assert result.rc != 0 and result.failed_hosts(), result
    assert "No device IP plan for server1" in result.stdout and CONFIGURE_TASK not in result.stdout
    assert cluster_values(cluster)["server0"][0] == ("", "", "")


def test_limit_without_server_list_is_refused(sim_cluster, tmp_path):
    cluster = sim_cluster(servers=2, chip="910A", preset_ips=False)
    play, inventory = write_bed(tmp_path, cluster, SMP_VARS)
    result = run_playbook(play, inventory, limit="server1", env=ENV)
    assert result.rc != 0 and "Set ascend_device_ip_servers" in result.stdout, result
    ok = run_playbook(play, inventory, limit="server1", env=ENV, extra_vars={"ascend_device_ip_servers": ["server0", "server1"]})
    assert ok.rc == 0, ok
    values = cluster_values(cluster)
    assert values["server1"][0][0] == "198.18.100.111" and values["server0"][0][0] == ""


@pytest.mark.parametrize(
    "chip, group_vars",
    [
        # the simulator's own presets (ascend_sim.admin.ip_plan), written as role variables
        (
            "910A",
            {
                "ascend_device_ip_layout": "smp",
                "ascend_device_ip_gateway_host": 1,
                "ascend_device_ip_networks": ["198.18.%d.0/24" % n for n in range(4)],
            },
        ),
        (
            "910B",
            {
                "ascend_device_ip_layout": "amp",
                "ascend_device_ip_gateway_host": 1,
                "ascend_device_ip_networks": ["198.18.0.0/16"],
                "ascend_device_ip_first_host": 266,
                "ascend_device_ip_server_step": 256,
            },
        ),
    ],
)
def test_already_configured_cluster_is_left_alone(sim_cluster, tmp_path, chip, group_vars):
    cluster = sim_cluster(servers=2, chip=chip, preset_ips=True)
    play, inventory = write_bed(tmp_path, cluster, group_vars)
    before = cluster_values(cluster)
    result = run_playbook(play, inventory, env=ENV)
    assert result.rc == 0 and result.changed() == 0, result
    assert cluster_values(cluster) == before
