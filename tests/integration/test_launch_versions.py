"""Firmware and CANN versions (issue 26 item 5) on the simulated 2 x 8 cluster: the pre-flight reads them in its one call
per server and refuses servers that differ, naming each version with its servers (unless
ascend_launch_allow_mixed_versions); hccn_facts shows them."""

from __future__ import annotations

from tests.helpers.ansible_cli import run_module, run_playbook

from .conftest import SIM_INVENTORY
from .test_launch_playbooks import TRAIN, launch_vars, refused_train


def test_mixed_firmware_is_refused_naming_each_server(sim_cluster):
    cluster = sim_cluster()
    cluster["server0"].fault("versions", "--firmware", "6.2.1.0", "--device", "5")  # one NPU's board
    output = refused_train(cluster)
    assert (
        "launch refused, nothing was started: the servers run different NPU firmware versions: "
        "7.1.0.4.218 on server1; 7.1.0.4.218 (NPU 0, 1, 2, 3, 4, 6, 7) / 6.2.1.0 (NPU 5) on server0. "
        "Ranks on different firmware or CANN fail or train differently: install one NPU firmware everywhere "
        "(the one released with the driver), or allow it with ascend_launch_allow_mixed_versions=true" in output
    ), output


def test_mixed_cann_toolkit_and_kernels_are_refused_then_allowed(sim_cluster):
    cluster = sim_cluster()
    cluster["server1"].fault("versions", "--toolkit", "8.3.RC2", "--kernels", "none")
    refused = refused_train(cluster)
    assert (
        "launch refused, nothing was started: the servers run different CANN toolkit versions: 8.3.RC1.alpha001 on server0; "
        "8.3.RC2 on server1. Ranks on different firmware or CANN fail or train differently: install one CANN toolkit "
        "everywhere, or allow it with ascend_launch_allow_mixed_versions=true. The servers run different CANN kernels "
        "versions: 8.3.RC1.alpha001 on server0; not installed on server1." in refused
    ), refused
    # one server only: nothing to differ from
    alone = run_playbook(TRAIN, SIM_INVENTORY, extra_vars=launch_vars(cluster, np=8, ascend_train_env={"STEPS": "1"}), limit="server1")
    assert alone.rc == 0, alone


def test_hccn_facts_show_the_driver_firmware_and_cann_versions(sim_cluster):
    server = sim_cluster(servers=1, chip="A3", devices=4).servers[0]
    args = {"hccn_conf": str(server.hccn_conf), "cann_dir": str(server.state_dir.parent / "Ascend")}
    facts = run_module("hccn_facts", args, env=server.env)["ansible_facts"]["ascend_npu"]
    assert (facts["driver_version"], facts["firmware_version"]) == ("25.3.rc1", "7.7.0.9.220")
    assert (facts["cann_toolkit_version"], facts["cann_kernels_version"]) == ("8.3.RC1.alpha001", "8.3.RC1.alpha001")
    server.fault("versions", "--firmware", "none", "--kernels", "none")
    facts = run_module("hccn_facts", args, env=server.env)["ansible_facts"]["ascend_npu"]
    assert (facts["firmware_version"], facts["cann_kernels_version"]) == (None, "not installed")
    # CANN elsewhere than where it is looked for: unknown
    facts = run_module("hccn_facts", dict(args, cann_dir=str(server.state_dir)), env=server.env)["ansible_facts"]["ascend_npu"]
    assert facts["cann_toolkit_version"] is None
