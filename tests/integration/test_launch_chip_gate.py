"""The pre-flight's chip health and driver version gate (train on the simulated 2 x 8 cluster).

npu-smi info's Health column: Alarm or Critical on a selected device refuses the launch, naming
the device, before anything starts; Warning warns. Servers whose npu-smi (driver) versions differ
are refused unless ``ascend_launch_allow_mixed_versions``. A TCP port the job will listen on that
something already listens on is refused, naming who holds it.
"""

from __future__ import annotations

import os
import socket

from tests.helpers.ansible_cli import run_playbook

from .conftest import SIM_INVENTORY
from .test_launch_playbooks import TRAIN, launch_vars, rank_states, refused_train


def test_a_chip_in_alarm_refuses_the_launch_naming_it(sim_cluster):
    cluster = sim_cluster()
    cluster["server1"].fault("chip-health", "--device", "3", "--status", "Alarm")
    cluster["server1"].fault("chip-health", "--device", "6", "--status", "Critical")
    output = refused_train(cluster)
    assert "chip health, nothing was started: npu-smi info shows device 3 (910B3): Alarm; device 6 (910B3): Critical" in output, output
    assert "leave the device out of the job" in output
    assert not (cluster.root / "controller").exists()


def test_mixed_driver_versions_are_refused_unless_allowed_and_a_warning_chip_warns(sim_cluster):
    cluster = sim_cluster()
    cluster["server0"].fault("npu-smi-version", "--version", "23.0.rc2")
    refused = refused_train(cluster)
    assert (
        "launch refused, nothing was started: the servers run different npu-smi (driver) versions: "
        "23.0.rc2 on server0; 24.1.0 on server1" in refused
    ), refused
    assert "ascend_launch_allow_mixed_versions=true" in refused

    cluster["server0"].fault("chip-health", "--device", "1", "--status", "Warning")
    allowed = run_playbook(
        TRAIN,
        SIM_INVENTORY,
        extra_vars=launch_vars(cluster, np=16, ascend_launch_allow_mixed_versions=True, ascend_train_env={"STEPS": "1"}),
    )
    assert allowed.rc == 0, allowed
    # issue 25 item 4: the warning names its server on its own line
    warning = "server0: device 1 (910B3): npu-smi info shows Health Warning; the launch goes on, but check the chip"
    assert [line for line in allowed.output.splitlines() if "Health Warning" in line] == [f"[WARNING]: {warning}"], allowed
    assert sorted(rank_states(cluster)) == list(range(16))


def test_a_port_the_job_needs_is_taken_and_the_launch_is_refused_naming_it(sim_cluster):
    """The simulated servers share this machine's network, so this job moves HCCL to its own base port."""
    cluster = sim_cluster()
    base = 61200 + os.getpid() % 500  # away from the 60000 range the other tests' jobs check
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", base + 3))
        squatter.listen(1)
        # the sim inventory checks no HCCL port (its servers share this machine's ports): this job does
        output = refused_train(cluster, ascend_launch_hccl_port_count=16, ascend_train_env={"HCCL_IF_BASE_PORT": str(base)})
    assert f"ports in use, nothing was started: TCP port {base + 3} is listened on by pid {os.getpid()}" in output, output
    assert "EI0019" in output
