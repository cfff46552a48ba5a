"""Role ascend.cluster.net_health on the simulated local 2 x 8 cluster (examples/sim/inventory.yml)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.helpers.ansible_cli import run_playbook

from .conftest import SIM_INVENTORY

PLAY = """\
- name: Check the parameter plane
  hosts: ascend
  gather_facts: false
  roles:
    - role: ascend.cluster.net_health
"""


@pytest.fixture
def play(tmp_path: Path) -> Path:
    path = tmp_path / "net_health.yml"
    path.write_text(PLAY)
    return path


def netdetect(server, device: int) -> str:
    return server.hccn_tool("-i", str(device), "-netdetect", "-g").stdout.split(":", 1)[1].strip()


def problem_lines(output: str) -> list[str]:
    """The report's problem lines as printed in the table task (one quoted string each)."""
    return sorted(
        {
            line.strip().strip('",')
            for line in output.splitlines()
            if " device " in line and " - " in line and line.strip().startswith('"server')
        }
    )


def test_a_healthy_cluster_prints_one_table_and_changes_nothing(sim_cluster, play):
    cluster = sim_cluster()
    result = run_playbook(play, SIM_INVENTORY, extra_vars=cluster.inventory_vars)
    assert result.rc == 0, result
    assert result.changed() == 0, result
    assert "SERVER   DEVICE  IP              LINK  HEALTH   NETDETECT   TLS  STATUS" in result.stdout
    # four devices, then one line for the others; the JSON report for CI has every device
    assert result.stdout.count("  Success  198.18.0.1  off  ok") == 4
    assert "... 12 more row(s) with STATUS ok; -e ascend_report_all_rows=true lists them" in result.stdout
    assert "net_health: 16/16 devices OK on 2 server(s)" in result.stdout
    report = json.loads((cluster.root / "controller" / "net_health.json").read_text())
    assert (report["schema"], report["kind"], report["ok"], report["line"]) == (
        1,
        "net_health",
        True,
        "net_health: 16/16 devices OK on 2 server(s)",
    )
    assert len(report["rows"]) == 16 and report["problems"] == []
    assert (cluster.root / "controller" / "net_health.json").stat().st_mode & 0o777 == 0o644


def test_a_link_down_fails_naming_exactly_that_server_and_device(sim_cluster, play):
    cluster = sim_cluster()
    cluster["server1"].fault("link", "--device", "2", "--down")
    result = run_playbook(play, SIM_INVENTORY, extra_vars=cluster.inventory_vars)
    assert result.rc != 0, result
    assert problem_lines(result.stdout) == ["server1 device 2: link DOWN - check the optics/cable of NPU 2 (eth2) and its switch port"]
    assert "1 problem(s) on the parameter plane: server1 device 2: link DOWN" in result.stdout
    report = json.loads((cluster.root / "controller" / "net_health.json").read_text())
    assert report["ok"] is False and report["bad"] == [{"server": "server1", "device": 2, "status": "link DOWN"}]
    assert report["line"].startswith("FAILED: net_health: 1 problem(s) on the parameter plane: server1 device 2: link DOWN")
    assert report["table"][1].split()[:2] == ["server1", "2"]  # the bad device first


def test_peer_mode_points_each_device_at_the_next_server_once(sim_cluster, play):
    cluster = sim_cluster()
    extra = {**cluster.inventory_vars, "ascend_net_health_netdetect": "peer"}
    checked = run_playbook(play, SIM_INVENTORY, extra_vars=extra, check=True)
    assert checked.rc == 0, checked
    assert netdetect(cluster["server0"], 3) == "198.18.0.1", "check mode changed a netdetect target"
    first = run_playbook(play, SIM_INVENTORY, extra_vars=extra)
    assert first.rc == 0, first
    assert first.changed("server0") == 1 and first.changed("server1") == 1, first  # one call per host
    assert [netdetect(cluster["server0"], d) for d in range(8)] == [f"198.18.2.{10 + d}" for d in range(8)]
    assert [netdetect(cluster["server1"], d) for d in range(8)] == [f"198.18.1.{10 + d}" for d in range(8)]
    second = run_playbook(play, SIM_INVENTORY, extra_vars=extra)
    assert second.rc == 0 and second.changed() == 0, second


def test_a_tls_switch_differing_between_devices_fails_the_cluster(sim_cluster, play):
    cluster = sim_cluster()
    cluster["server0"].fault("tls", "--device", "5", "--switch", "1")
    result = run_playbook(play, SIM_INVENTORY, extra_vars={**cluster.inventory_vars, "ascend_report_all_rows": True})
    assert result.rc != 0, result
    assert "cluster: TLS switch differs between devices (on at server0 device 5)" in result.stdout
    assert "server0  5       198.18.1.15/16  UP    Success  198.18.0.1  on   ok" in result.stdout


def test_a_stale_hccn_conf_is_reported_with_its_keys(sim_cluster, play):
    cluster = sim_cluster()
    cluster["server0"].fault("stale-conf", "--device", "1")
    result = run_playbook(play, SIM_INVENTORY, extra_vars=cluster.inventory_vars)
    assert result.rc != 0, result
    assert [line.split(" - ")[0] for line in problem_lines(result.stdout)] == ["server0 device 1: conf stale"]
    # the hint names the file this host's facts were checked against (ascend_hccn_conf), not always /etc/hccn.conf
    assert f"{cluster['server0'].hccn_conf} disagrees with the device on address" in result.stdout, result


def test_the_wait_for_init_is_bounded(sim_cluster, play):
    cluster = sim_cluster()
    cluster["server1"].fault("health", "--device", "4", "--status", "Init")
    start = time.monotonic()
    result = run_playbook(
        play, SIM_INVENTORY, extra_vars={**cluster.inventory_vars, "ascend_net_health_retries": 2, "ascend_net_health_delay": 1}
    )
    elapsed = time.monotonic() - start
    assert result.rc != 0, result
    assert [line.split(" - ")[0] for line in problem_lines(result.stdout)] == ["server1 device 4: Init"]
    # retries=2: three reads, so two "FAILED - RETRYING" lines for server1 (their "N retries left"
    # counts differ between ansible-core versions: 2, 1 on 2.19; 1, 0 on 2.21)
    retrying = [
        line
        for line in result.stdout.splitlines()
        if line.startswith("FAILED - RETRYING: [server1]") and "Read the devices until net_health has left Init" in line
    ]
    assert len(retrying) == 2, result
    assert "FAILED - RETRYING: [server0]" not in result.stdout
    assert elapsed >= 2


def test_report_only_mode_does_not_fail(sim_cluster, play):
    cluster = sim_cluster()
    cluster["server1"].fault("link", "--device", "0", "--down")
    result = run_playbook(play, SIM_INVENTORY, extra_vars={**cluster.inventory_vars, "ascend_net_health_fail": False})
    assert result.rc == 0, result
    assert "server1 device 0: link DOWN" in result.stdout


def test_the_ping_mesh_names_a_path_that_loses_pings_between_healthy_devices(sim_cluster, play):
    """ascend_net_health_ping_mesh=sampled: every device pings the same device of the other server
    (hccn_tool -ping through the simulator); server0's device 2 no longer reaches server1's device 2,
    while both devices and their netdetect probes stay healthy."""
    cluster = sim_cluster()
    cluster["server0"].fault("unreachable", "--ip", "198.18.2.12", "--device", "2")
    result = run_playbook(play, SIM_INVENTORY, extra_vars={**cluster.inventory_vars, "ascend_net_health_ping_mesh": "sampled"})
    assert result.rc != 0, result
    assert problem_lines(result.stdout) == [
        "server0 device 2 -> server1 device 2 (198.18.2.12): 0/3 pings answered - check the cables, switch ports and VLAN"
        " between them (the device IPs answer, the path does not)"
    ], result
    report = json.loads((cluster.root / "controller" / "net_health.json").read_text())
    assert report["bad"] == [{"server": "server0", "device": 2, "status": "ping lost"}]
