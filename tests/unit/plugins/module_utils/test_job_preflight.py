"""The launch's pre-flight (``_job.preflight.run``, the body of ``training_job state=preflight``): npu-smi read once,
the chips' health, the devices' holders, and what it refuses with, before anything is stopped or started."""

from __future__ import annotations

import fcntl
import os

import pytest

from ansible_collections.ascend.cluster.plugins.module_utils._job import preflight
from tests.unit.plugins.module_utils.hccn_fakes import INFO_TABLE_910B, NPU_SMI, FakeModule


def params(tmp_path, **more) -> dict:
    """``training_job``'s pre-flight parameters, defaults as its argument spec has them."""
    found = {
        "npu_smi": None,
        "devices": [0, 1],
        "lock_dir": str(tmp_path / "locks"),
        "job_root": str(tmp_path / "jobs"),
        "cann_dir": str(tmp_path / "cann"),
        "bank_dir": None,
        "allow_unknown_health": False,
        "nic": "",
        "host_ip": "",
        "ports": [],
        "kill_stale": False,
        "grace": 0.1,
        "stale_timeout": 0.5,
    }
    found.update(more)
    return found


def npu_smi(table: str = INFO_TABLE_910B) -> FakeModule:
    fake = FakeModule(bins={"npu-smi": NPU_SMI})
    fake.transcript[(NPU_SMI, "info")] = (0, table, "")
    return fake


def test_a_healthy_server_with_free_devices_passes_and_says_what_it_read(tmp_path):
    fake = npu_smi()
    found = preflight.run(fake, params(tmp_path), runner=fake.run_tool)
    assert found["changed"] is False and found["busy"] == []
    assert found["npu_smi_status"] == "ok" and found["npu_smi_version"] == "23.0.0"
    assert found["chip_health"] == {0: "OK", 1: "OK"}
    assert [c for c in fake.calls if c == (NPU_SMI, "info")] == [(NPU_SMI, "info")]  # read once


def test_an_alarm_chip_refuses_the_launch_naming_the_device(tmp_path):
    fake = npu_smi(INFO_TABLE_910B.replace("| 1     910B3               | OK     ", "| 1     910B3               | Alarm  "))
    with pytest.raises(preflight.PreflightFailed) as caught:
        preflight.run(fake, params(tmp_path), runner=fake.run_tool)
    assert caught.value.fields["msg"].startswith("chip health, nothing was started: npu-smi info shows device 1 (910B3): Alarm.")
    assert caught.value.fields["chip_health"] == {0: "OK", 1: "Alarm"} and caught.value.fields["busy"] == []


def test_npu_smi_missing_is_refused_on_the_controller_and_nothing_is_checked_here(tmp_path):
    fake = FakeModule(bins={})
    found = preflight.run(fake, params(tmp_path, kill_stale=True), runner=fake.run_tool)
    assert found["npu_smi_status"] == "refuse" and found["npu_smi_problem"].startswith("npu-smi not found on PATH")
    assert found["chip_health"] == {} and "freed" not in found and fake.calls == []
    allowed = preflight.run(fake, params(tmp_path, allow_unknown_health=True), runner=fake.run_tool)
    assert allowed["npu_smi_status"] == "allowed" and allowed["busy"] == []


def test_a_device_locked_by_another_launch_is_refused_and_check_mode_stops_nothing(tmp_path):
    os.makedirs(tmp_path / "locks")
    fd = os.open(tmp_path / "locks" / "device_1.lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.write(fd, b"job other rank 3 pid 1")
        fake = npu_smi()
        for check_mode in (False, True):
            with pytest.raises(preflight.PreflightFailed) as caught:
                preflight.run(fake, params(tmp_path, kill_stale=check_mode), check_mode=check_mode, runner=fake.run_tool)
            msg = caught.value.fields["msg"]
            assert msg.startswith("devices in use, nothing was started: device 1: ") and "kill_stale=true" in msg, msg
            assert [b["device_id"] for b in caught.value.fields["busy"]] == [1]
    finally:
        os.close(fd)


def test_a_nic_without_an_address_is_refused_before_the_devices_are_looked_at(tmp_path):
    fake = npu_smi()
    with pytest.raises(preflight.PreflightFailed) as caught:
        preflight.run(fake, params(tmp_path, nic="ascend-no-such-nic0"), runner=fake.run_tool)
    assert caught.value.fields["msg"].startswith("HCCL's host NIC, nothing was started: ")
    assert "ascend-no-such-nic0" in caught.value.fields["msg"]
