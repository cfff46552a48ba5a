"""hccn_facts against the simulator: the module run exactly as Ansible runs it, on simulated servers."""

from __future__ import annotations

import json
import sys
import textwrap

import pytest

from tests.helpers.ansible_cli import run_module, run_playbook


def facts_of(server, check=False, **args):
    """Run hccn_facts on ``server`` (its simulated hccn_tool / npu-smi on PATH) and return the result."""
    args.setdefault("hccn_conf", str(server.hccn_conf))
    return run_module("hccn_facts", args, env=server.env, check=check)


def npu(result):
    assert result["_rc"] == 0 and not result.get("failed"), result
    return result["ansible_facts"]["ascend_npu"]


def test_configured_server(sim_cluster):
    server = sim_cluster(servers=1).servers[0]
    result = facts_of(server)
    facts = npu(result)
    assert result["changed"] is False
    assert (facts["chip"], facts["chip_name"], facts["source"]) == ("910B", "910B3", "hccn_tool")
    assert facts["device_count"] == 8 and facts["device_list_source"] == "npu-smi"
    assert facts["hccn_tool"] == str(server.bin_dir / "hccn_tool")
    assert facts["npu_smi"] == str(server.bin_dir / "npu-smi")
    assert [d["device_id"] for d in facts["devices"]] == list(range(8))
    for dev in facts["devices"]:
        # what the device itself says, field by field
        ip_out = server.hccn_tool("-i", str(dev["device_id"]), "-ip", "-g").stdout
        assert ip_out == "ipaddr:%s\nnetmask:%s\n" % (dev["device_ip"], dev["netmask"])
        assert dev["gateway"] and dev["netdetect"] and dev["link"] == "UP" and dev["net_health"] == "Success"
        assert dev["error"] is None and dev["stale_conf"] is False and dev["stale_keys"] == []
        assert dev["conf"]["address"] == dev["device_ip"]
    assert len({d["device_ip"] for d in facts["devices"]}) == 8
    assert facts["warnings"] == [] and not result.get("warnings")


def test_old_driver_variant(sim_cluster):
    server = sim_cluster(servers=1, devices=2, driver_variant="old").servers[0]
    assert server.hccn_tool("-i", "0", "-netdetect", "-g").stdout.startswith("netdetect address:")
    facts = npu(facts_of(server))
    assert all(d["netdetect"] == d["conf"]["netdetect"] != "" for d in facts["devices"])


def test_fresh_server_is_a_normal_state(sim_cluster):
    server = sim_cluster(servers=1, preset_ips=False).servers[0]
    facts = npu(facts_of(server))
    for dev in facts["devices"]:
        assert (dev["device_ip"], dev["netmask"], dev["gateway"], dev["netdetect"]) == ("", "", "", "")
        assert dev["ips"] == [] and dev["error"] is None and dev["stale_conf"] is False
        assert dev["net_health"] == "Init"


def test_faults_link_down_device_error_stale_conf(sim_cluster):
    server = sim_cluster(servers=1).servers[0]
    server.fault("link", "--device", "2", "--down")
    server.fault("error", "--device", "5")
    server.fault("stale-conf", "--device", "6", "--address", "198.18.9.9")
    facts = npu(facts_of(server))
    devices = {d["device_id"]: d for d in facts["devices"]}
    assert devices[2]["link"] == "DOWN" and devices[2]["error"] is None
    assert devices[5]["error"] and devices[5]["error"] == server.hccn_tool("-i", "5", "-link", "-g").stderr.strip()
    assert devices[5]["device_ip"] is None and devices[5]["stale_conf"] is False
    assert devices[6]["stale_conf"] is True and devices[6]["stale_keys"] == ["address"]
    assert devices[6]["conf"]["address"] == "198.18.9.9" and devices[6]["device_ip"] != "198.18.9.9"
    assert [d for d, e in devices.items() if e["stale_conf"]] == [6]
    assert [d for d, e in devices.items() if e["error"]] == [5]


def test_conf_fallback_when_driver_missing(sim_cluster):
    server = sim_cluster(servers=1).servers[0]
    expected = {d["device_id"]: d["device_ip"] for d in npu(facts_of(server))["devices"]}
    server.fault("driver-missing")
    result = facts_of(server)
    facts = npu(result)
    assert facts["source"] == "hccn_conf" and facts["hccn_tool"] is None
    assert {d["device_id"]: d["device_ip"] for d in facts["devices"]} == expected
    assert all(d["link"] is None and d["net_health"] is None for d in facts["devices"])
    assert any("hccn_tool not found" in w for w in facts["warnings"])
    assert "hccn_tool not found" in json.dumps(result["warnings"])  # also a task warning


def test_nothing_installed_fails_clearly(sim_cluster, tmp_path):
    server = sim_cluster(servers=1).servers[0]
    server.fault("driver-missing")
    result = facts_of(server, hccn_conf=str(tmp_path / "absent.conf"))
    assert result["failed"] and result["_rc"] != 0
    assert "install the Ascend NPU driver" in result["msg"]


def test_check_mode_explicit_devices_and_tls(sim_cluster):
    server = sim_cluster(servers=1).servers[0]
    server.fault("tls", "--device", "1", "--switch", "1")
    facts = npu(facts_of(server, check=True, devices=[1, 3], gather=["tls", "mac"]))
    assert facts["device_list_source"] == "devices option"
    assert [d["device_id"] for d in facts["devices"]] == [1, 3]
    assert [d["tls_switch"] for d in facts["devices"]] == [True, False]
    assert all(len(d["mac"]) == 17 for d in facts["devices"])


def test_hung_calls_are_stopped_by_the_timeout(sim_cluster):
    server = sim_cluster(servers=1).servers[0]
    server.fault("latency", "--seconds", "5")
    facts = npu(facts_of(server, devices=[0, 1], timeout=1))
    for dev in facts["devices"]:
        assert dev["error"].startswith("no answer within the timeout (rc=124)") and dev["device_ip"] is None


def test_invalid_device_is_reported_not_fatal(sim_cluster):
    server = sim_cluster(servers=1).servers[0]
    facts = npu(facts_of(server, devices=[0, 9]))
    ok, bad = facts["devices"]
    assert ok["error"] is None and bad["error"] == "Get invalid device id."


@pytest.mark.parametrize(
    "args,needle",
    [
        ({"devices": [0, 99]}, "out of range"),
        ({"parallel": 0}, "parallel must be 1 or more"),
        ({"hccn_tool": "/nonexistent/hccn_tool"}, "is not an executable file"),
        ({"gather": ["bogus"]}, "value of gather must be one or more of"),
        ({"devices": "zero"}, "devices"),
        ({"unknown_option": 1}, "Unsupported parameters"),
    ],
)
def test_bad_option_values(sim_cluster, args, needle):
    server = sim_cluster(servers=1).servers[0]
    result = facts_of(server, **args)
    assert result["failed"] and needle in result["msg"], result


def test_a3_server_sixteen_devices(sim_cluster):
    server = sim_cluster(servers=1, chip="A3", devices=16).servers[0]
    facts = npu(facts_of(server))
    assert facts["chip"] == "A3" and facts["chip_name"] == "Ascend910"
    assert [d["device_id"] for d in facts["devices"]] == list(range(16))
    assert all(d["device_ip"] and d["link"] == "UP" for d in facts["devices"])


def test_playbook_sets_facts(sim_cluster, tmp_path):
    server = sim_cluster(servers=1).servers[0]
    server.fault("link", "--device", "4", "--down")
    playbook = tmp_path / "facts.yml"
    playbook.write_text(
        textwrap.dedent("""\
        - hosts: localhost
          connection: local
          gather_facts: false
          environment: "{{ sim_env }}"
          tasks:
            - ascend.cluster.hccn_facts:
                hccn_conf: "{{ sim_conf }}"
            - ansible.builtin.copy:
                dest: "{{ out }}"
                content: "{{ ansible_facts.ascend_npu | to_json }}"
                mode: "0644"
            - ansible.builtin.assert:
                that: ansible_facts.ascend_npu.devices | selectattr('link', 'eq', 'DOWN') | map(attribute='device_id') | list == [4]
        """)
    )
    out = tmp_path / "facts.json"
    result = run_playbook(
        playbook,
        "localhost,",
        extra_vars={
            "sim_env": server.env,
            "sim_conf": str(server.hccn_conf),
            "out": str(out),
            "ansible_python_interpreter": sys.executable,
        },
    )
    assert result.rc == 0, result.output
    assert result.recap["localhost"]["changed"] == 1  # only the copy
    facts = json.loads(out.read_text())
    assert facts["device_count"] == 8 and facts["source"] == "hccn_tool"
