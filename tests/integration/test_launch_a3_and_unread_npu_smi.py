"""A3's device numbering through the pre-flight and diagnose, and the pre-flight failing closed when npu-smi cannot be read
(issue 26 items 3 and 4), on simulated clusters.

On A3 npu-smi lists a process by NPU and chip (the simulator: device d is NPU d // 2, chip d % 2), while the rank table,
health and every other part number a chip by its Phy-ID. A process on device 3 used to be charged to device 1 and one
on device 9 to device 4: the busy-device gate missed them, and ``kill_stale`` stopped a process on the wrong device.
"""

from __future__ import annotations

import json
import signal
import stat

from tests.helpers.ansible_cli import run_playbook
from tests.helpers.collection import REPO_ROOT
from tests.helpers.procs import alive

from .conftest import SIM_INVENTORY
from .test_launch_playbooks import TRAIN, launch_vars, rank_states

DIAGNOSE = REPO_ROOT / "playbooks" / "diagnose.yml"


def superpod_inventory(tmp_path, devices=16):
    """The SuperPoD ids an A3 (1.2) table needs, which hccn_facts cannot read: a second inventory source."""
    path = tmp_path / "superpod.yml"
    hosts = {f"server{s}": {"ascend_super_device_ids": {str(d): str(1000 + 16 * s + d) for d in range(devices)}} for s in (0, 1)}
    path.write_text(json.dumps({"ascend": {"vars": {"ascend_super_pod_id": 7}, "hosts": hosts}}))
    return ["-i", str(path)]


def test_a3_the_gate_charges_each_process_to_its_chip_kill_stale_stops_only_those_and_diagnose_names_the_device(sim_cluster, tmp_path):
    cluster = sim_cluster(chip="A3", devices=16)
    args = superpod_inventory(tmp_path)
    server1 = cluster["server1"]
    # the job runs on server1's devices 2, 3 and 9; leftovers hold 3 (NPU 1 chip 1) and 9 (NPU 4 chip 1), and another
    # job's process holds device 4 (NPU 2 chip 0) - which the NPU id of device 9's row, and the row of device 2's NPU, used to name
    job = {"npu_env": "127.0.1.2:3:2/3/9"}
    with server1.hold(3) as on3, server1.hold(9) as on9, server1.hold(4) as bystander:
        refused = run_playbook(TRAIN, SIM_INVENTORY, extra_vars=launch_vars(cluster, **job), args=args)
        assert refused.rc != 0, refused
        assert (
            f"devices in use, nothing was started: device 3: process {on3.pid} (sleep) holds NPU 1 chip 1 (device 3); "
            f"device 9: process {on9.pid} (sleep) holds NPU 4 chip 1 (device 9). Stop them" in refused.stdout
        ), refused
        assert str(bystander.pid) not in refused.stdout
        assert not (cluster.root / "runs").exists()

        env = {"STEPS": "3", "STEP_S": "0.1", "FAIL_RANK": "1", "FAIL_STEP": "2"}
        cleared = run_playbook(
            TRAIN, SIM_INVENTORY, extra_vars=launch_vars(cluster, kill_stale=True, ascend_train_env=env, **job), args=args
        )
        assert on3.wait(timeout=10) == -signal.SIGTERM and on9.wait(timeout=10) == -signal.SIGTERM
        assert alive(bystander.pid), "kill_stale stopped the process of a device the job does not use"
        # the job ran on the devices it was given (its failing rank is what diagnose reads below)
        assert cleared.rc != 0, cleared
        states = rank_states(cluster)
        assert sorted((s["device_id"], r) for r, s in states.items()) == [(2, 0), (3, 1), (9, 2)], states
        assert "FAILED: train" in cleared.stdout and "rank 1 (server 127.0.1.2, device 3) exit 1" in cleared.stdout, cleared

        # a process left on the job's device 9 afterwards: diagnose names it with that device
        with server1.hold(9) as left:
            diag_vars = {k: v for k, v in launch_vars(cluster).items() if k != "train_command"}
            diagnosed = run_playbook(DIAGNOSE, SIM_INVENTORY, extra_vars=diag_vars, args=args)
            assert diagnosed.rc == 0, diagnosed
            job_id = next((cluster.root / "runs").iterdir()).name
            diagnosis = json.loads((cluster.root / "controller" / job_id / "diagnosis.json").read_text())
            # (server0 ran no rank of the job: not read)
            assert diagnosis["live"]["leftovers"] == {"server1": [f"process {left.pid} (sleep) holds NPU 4 chip 1 (device 9)"]}, diagnosis
            assert f"server1: process {left.pid} (sleep) holds NPU 4 chip 1 (device 9) - ascend.cluster.stop" in diagnosed.stdout, diagnosed
        assert alive(bystander.pid)


# The launch composed as train.yml composes it (facts and table, then the launch role), with server1's npu-smi replaced
# between the two: the facts read the simulated npu-smi, the pre-flight gets what the test puts there.
BROKEN_BEFORE_LAUNCH = """\
- name: Train, with server1's npu-smi breaking after the rank table was built
  hosts: ascend
  gather_facts: false
  vars:
    ascend_np: 16
    ascend_rank_table_spread: true
    ascend_rank_table_write: false
  tasks:
    - name: Build the rank table
      ansible.builtin.import_role:
        name: ascend.cluster.rank_table
    - name: Break server1's npu-smi
      ansible.builtin.set_fact:
        ascend_npu_smi: "{{ broken_npu_smi }}"
      when: inventory_hostname == 'server1'
    - name: Launch
      ansible.builtin.import_role:
        name: ascend.cluster.launch_training
"""


def test_npu_smi_failing_on_a_server_refuses_the_launch_naming_it_unless_allowed(sim_cluster, tmp_path):
    cluster = sim_cluster()
    playbook = tmp_path / "broken_npu_smi.yml"
    playbook.write_text(BROKEN_BEFORE_LAUNCH)
    broken = tmp_path / "npu-smi"
    # what npu-smi prints where it cannot reach the driver (its exit status here is the test's choice)
    broken.write_text(
        "#!/bin/sh\necho 'DrvMngGetConsoleLogLevel failed. (g_conLogLevel=3)'\necho 'dcmi module initialize failed. ret is -8005'\nexit 1\n"
    )
    broken.chmod(broken.stat().st_mode | stat.S_IXUSR)
    # a leftover on server1's device 3 that only npu-smi could have shown: kill_stale must not get to it either
    with cluster["server1"].hold(3) as leftover:
        base = launch_vars(cluster, kill_stale=True, ascend_train_command="bash {{ train_command_script }}", broken_npu_smi=str(broken))
        base["train_command_script"] = str(REPO_ROOT / "examples" / "train" / "train_1p.sh")
        refused = run_playbook(playbook, SIM_INVENTORY, extra_vars=base)
        assert refused.rc != 0, refused
        assert (
            f"launch refused, nothing was started: npu-smi could not be read on server1 - server1: {broken} info failed (rc=1): "
            "DrvMngGetConsoleLogLevel failed. (g_conLogLevel=3) dcmi module initialize failed. ret is -8005. Without it the "
            "health of the chips and the processes holding the selected devices there are unknown" in refused.stdout
        ), refused
        assert "ascend_launch_allow_unknown_health=true" in refused.stdout
        assert not (cluster.root / "runs").exists() and not (cluster.root / "controller").exists()
        assert alive(leftover.pid)

    allowed = run_playbook(
        playbook,
        SIM_INVENTORY,
        extra_vars=dict(
            base,
            ascend_launch_allow_unknown_health=True,
            ascend_launch_allow_mixed_versions=True,  # server1's driver version is unknown too: a mismatch otherwise
            ascend_train_env={"STEPS": "1"},
        ),
    )
    assert allowed.rc == 0, allowed
    warning = (
        f"[WARNING]: server1: {broken} info failed (rc=1): DrvMngGetConsoleLogLevel failed. (g_conLogLevel=3) dcmi module "
        "initialize failed. ret is -8005: the health of its chips and the processes holding its devices were not checked "
        "(ascend_launch_allow_unknown_health=true); the launch goes on"
    )
    assert warning in allowed.output, allowed
    assert sorted(rank_states(cluster)) == list(range(16))
