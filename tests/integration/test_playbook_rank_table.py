"""playbooks/rank_table.yml on the simulated local cluster (examples/sim/inventory.yml)."""

from __future__ import annotations

import json
import re

from tests.helpers.ansible_cli import run_playbook

from .conftest import SIM_INVENTORY


def device_ips(server):
    ips = {}
    for dev in range(8):
        out = server.hccn_tool("-i", str(dev), "-ip", "-g").stdout
        ips[dev] = out.splitlines()[0].split(":", 1)[1]
    return ips


def test_sixteen_devices_make_one_table_on_every_server_and_a_second_run_changes_nothing(sim_cluster):
    cluster = sim_cluster()
    result = run_playbook("playbooks/rank_table.yml", SIM_INVENTORY, extra_vars={**cluster.inventory_vars, "np": 16})
    assert result.rc == 0, result
    tables = [json.loads((cluster.root / name / "etc" / "rank_table.json").read_text()) for name in ("server0", "server1")]
    controller = json.loads((cluster.root / "rank_table.json").read_text())
    assert tables[0] == tables[1] == controller
    assert controller["version"] == "1.0" and controller["server_count"] == "2" and controller["status"] == "completed"
    assert [s["server_id"] for s in controller["server_list"]] == ["127.0.1.1", "127.0.1.2"]
    ranks = [d["rank_id"] for s in controller["server_list"] for d in s["device"]]
    assert ranks == [str(r) for r in range(16)]
    # The IPs come from the devices (hccn_tool), not from anywhere else.
    for entry, server in zip(controller["server_list"], cluster.servers):
        assert {int(d["device_id"]): d["device_ip"] for d in entry["device"]} == device_ips(server)
    assert oct((cluster.root / "server0" / "etc" / "rank_table.json").stat().st_mode & 0o777) == "0o644"
    assert "RANK  SERVER     DEVICE  DEVICE_IP" in result.stdout

    # the second run changes nothing; under a common quiet setting (ok results not printed) the table
    # and the one line still are, once
    quiet = {"ANSIBLE_DISPLAY_OK_HOSTS": "false", "ANSIBLE_DISPLAY_SKIPPED_HOSTS": "false"}
    second = run_playbook("playbooks/rank_table.yml", SIM_INVENTORY, extra_vars={**cluster.inventory_vars, "np": 16}, env=quiet)
    assert second.rc == 0 and second.changed() == 0, second
    assert second.stdout.count("RANK  SERVER     DEVICE  DEVICE_IP") == 1, second
    line = "rank_table: 16 rank(s) on 2 server(s) (np spread evenly over the servers); written to "
    assert second.stdout.count(line) == 1 and "/server0/etc/rank_table.json on each of them" in second.stdout, second


def test_the_device_is_the_truth_not_a_stale_conf(sim_cluster):
    cluster = sim_cluster()
    cluster["server1"].fault("stale-conf", "--device", "all")
    result = run_playbook("playbooks/rank_table.yml", SIM_INVENTORY, extra_vars={**cluster.inventory_vars, "np": 16})
    assert result.rc == 0, result
    table = json.loads((cluster.root / "rank_table.json").read_text())
    assert {int(d["device_id"]): d["device_ip"] for d in table["server_list"][1]["device"]} == device_ips(cluster["server1"])


def test_npu_env_selects_the_seed_launchers_way(sim_cluster):
    cluster = sim_cluster()
    result = run_playbook(
        "playbooks/rank_table.yml",
        SIM_INVENTORY,
        extra_vars={**cluster.inventory_vars, "npu_env": "127.0.1.1:4:0123,127.0.1.2:4:0123"},
    )
    assert result.rc == 0, result
    table = json.loads((cluster.root / "rank_table.json").read_text())
    assert [[d["device_id"] for d in s["device"]] for s in table["server_list"]] == [["0", "1", "2", "3"]] * 2


def test_impossible_np_fails_before_any_table_is_written(sim_cluster):
    cluster = sim_cluster()
    result = run_playbook("playbooks/rank_table.yml", SIM_INVENTORY, extra_vars={**cluster.inventory_vars, "np": 13})
    assert result.rc != 0
    # the message alone, first, not after Ansible's "The filter plugin 'select_devices' failed"
    assert '"msg": "np=13 is not possible with the available 910B devices' in result.stdout, result
    assert "filter plugin" not in result.output
    assert not (cluster.root / "server0" / "etc" / "rank_table.json").exists()


def test_np_is_spread_over_the_servers_like_train(sim_cluster):
    cluster = sim_cluster()
    result = run_playbook("playbooks/rank_table.yml", SIM_INVENTORY, extra_vars={**cluster.inventory_vars, "np": 8})
    assert result.rc == 0, result
    table = json.loads((cluster.root / "rank_table.json").read_text())
    assert [[d["device_id"] for d in s["device"]] for s in table["server_list"]] == [["0", "1", "2", "3"]] * 2


def test_devices_without_ips_are_refused_across_servers_all_named_and_warned_about_on_one(sim_cluster):
    cluster = sim_cluster(preset_ips=False)  # freshly racked: no device has an IP yet
    spread = run_playbook("playbooks/rank_table.yml", SIM_INVENTORY, extra_vars={**cluster.inventory_vars, "np": 8})
    assert spread.rc != 0, spread
    # our message first, every device in it, and what to run; not behind a filter-plugin traceback
    assert (
        "[ERROR]: Task failed: Action failed: 8 selected devices have no device IP, which HCCL needs when more than one "
        "server takes part: server0 (127.0.1.1) devices 0-3; server1 (127.0.1.2) devices 0-3. Give every device its IP "
        "with ansible-playbook ascend.cluster.prepare" in spread.output
    ), spread
    assert "Finalization of task args" not in spread.output and "filter plugin" not in spread.output, spread
    assert not (cluster.root / "rank_table.json").exists()
    assert not (cluster.root / "server0" / "etc" / "rank_table.json").exists()

    packed = run_playbook("playbooks/rank_table.yml", SIM_INVENTORY, extra_vars={**cluster.inventory_vars, "np": 8, "spread": False})
    assert packed.rc == 0, packed
    assert "[WARNING]: rank_table: server 127.0.1.1 devices 0-7 have no device_ip" in packed.output, packed
    assert "ascend.cluster.prepare" in packed.output
    table = json.loads((cluster.root / "rank_table.json").read_text())
    assert [s["server_id"] for s in table["server_list"]] == ["127.0.1.1"]


def test_a3_superpod_table_from_inventory_ids(sim_cluster, tmp_path):
    # hccn_facts reads no SuperPoD ids: an A3 inventory states them (a second inventory source here)
    cluster = sim_cluster(chip="A3", devices=4)
    superpod = tmp_path / "superpod.yml"
    superpod.write_text(
        json.dumps(
            {
                "ascend": {
                    "vars": {"ascend_super_pod_id": 7},
                    "hosts": {
                        f"server{s}": {"ascend_super_device_ids": {str(d): str(1000 + 16 * s + d) for d in range(4)}} for s in (0, 1)
                    },
                }
            }
        )
    )
    result = run_playbook(
        "playbooks/rank_table.yml", SIM_INVENTORY, extra_vars={**cluster.inventory_vars, "np": 8}, args=["-i", str(superpod)]
    )
    assert result.rc == 0, result
    table = json.loads((cluster.root / "rank_table.json").read_text())
    assert table["version"] == "1.2"
    assert table["super_pod_list"] == [{"super_pod_id": "7", "server_list": [{"server_id": "127.0.1.1"}, {"server_id": "127.0.1.2"}]}]
    assert [d["super_device_id"] for s in table["server_list"] for d in s["device"]] == [
        str(1000 + i) for i in (0, 1, 2, 3, 16, 17, 18, 19)
    ]


def test_a3_without_superpod_ids_fails_saying_what_to_set(sim_cluster):
    cluster = sim_cluster(chip="A3", devices=4)
    result = run_playbook("playbooks/rank_table.yml", SIM_INVENTORY, extra_vars={**cluster.inventory_vars, "np": 8})
    assert result.rc != 0
    assert "needs ids that hccn_facts cannot read: set ascend_super_pod_id and ascend_super_device_ids" in result.stdout, result
    assert "for server0, server1" in result.stdout, result
    assert not (cluster.root / "rank_table.json").exists()


def test_the_910a_refusal_names_a_variable_the_playbook_takes_and_following_it_works(sim_cluster):
    """Issue 25 item 3: the hint was allow_partial_servers=true, which the playbooks refuse ("did you mean allow_partial?")."""
    cluster = sim_cluster(chip="910A")
    extra = {**cluster.inventory_vars, "npu_env": "127.0.1.1:4:0123,127.0.1.2:4:0123"}
    refused = run_playbook("playbooks/rank_table.yml", SIM_INVENTORY, extra_vars=extra)
    assert refused.rc != 0, refused
    hint = re.search(r"use whole servers, or set (\w+)=true if your CANN allows 1/2/4 x N\. No rank table was written\.", refused.stdout)
    assert hint, refused
    assert not (cluster.root / "rank_table.json").exists()
    followed = run_playbook("playbooks/rank_table.yml", SIM_INVENTORY, extra_vars={**extra, hint.group(1): True})
    assert followed.rc == 0, followed
    table = json.loads((cluster.root / "rank_table.json").read_text())
    assert [[d["device_id"] for d in s["device"]] for s in table["server_list"]] == [["0", "1", "2", "3"]] * 2
