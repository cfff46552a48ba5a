"""Per-rank environment: the AOE variables (TUNE_BANK_PATH, AOE_MODE) and their conflicts with the user's env."""

from __future__ import annotations

import pytest

from ansible_collections.ascend.cluster.plugins.module_utils._job.env import aoe_conflicts, aoe_env, rank_env
from tests.helpers.ranks import rank_entry

RANK = rank_entry(3, "10.0.0.1")
BANK = "/var/lib/ascend-cluster/tune_bank"


@pytest.mark.parametrize("framework", ["mindspore", "tensorflow", "pytorch", "mindspore_legacy"])
def test_library_run_exports_tune_bank_path_for_every_framework(framework):
    env = rank_env(framework, RANK, 120, {"STEPS": 3}, tune_bank_path=BANK)
    assert env["TUNE_BANK_PATH"] == BANK
    assert "AOE_MODE" not in env
    assert env["STEPS"] == "3"


def test_no_bank_no_aoe_variables():
    env = rank_env("mindspore", RANK, 120)
    assert "TUNE_BANK_PATH" not in env and "AOE_MODE" not in env


def test_tuning_run_gets_aoe_mode_and_bank_next_to_rank_zero_preset():
    env = rank_env("mindspore", dict(RANK, rank_id=0, device_id=0, local_rank=0), 120, tune_bank_path=BANK, aoe_mode=4)
    assert (env["AOE_MODE"], env["TUNE_BANK_PATH"], env["RANK_ID"], env["DEVICE_ID"], env["RANK_SIZE"]) == ("4", BANK, "0", "0", "16")


def test_users_own_tune_bank_path_passes_when_the_launcher_sets_none():
    env = rank_env("mindspore", RANK, 120, {"TUNE_BANK_PATH": "/mine", "AOE_MODE": "2"})
    assert (env["TUNE_BANK_PATH"], env["AOE_MODE"]) == ("/mine", "2")


def test_equal_user_value_is_no_conflict():
    assert aoe_conflicts({"TUNE_BANK_PATH": BANK, "AOE_MODE": 4}, BANK, 4) == []
    assert rank_env("mindspore", RANK, 120, {"TUNE_BANK_PATH": BANK}, tune_bank_path=BANK)["TUNE_BANK_PATH"] == BANK


def test_conflicting_tune_bank_path_is_refused_not_overridden():
    with pytest.raises(
        ValueError,
        match=r"TUNE_BANK_PATH=/elsewhere in the job's environment conflicts with "
        r"TUNE_BANK_PATH=/var/lib/ascend-cluster/tune_bank set by the launcher",
    ):
        rank_env("mindspore", RANK, 120, {"TUNE_BANK_PATH": "/elsewhere"}, tune_bank_path=BANK)


def test_conflicting_aoe_mode_is_named():
    problems = aoe_conflicts({"AOE_MODE": "2", "TUNE_BANK_PATH": "/x"}, BANK, 4)
    assert problems == [
        "AOE_MODE=2 in the job's environment conflicts with AOE_MODE=4 set by the launcher",
        "TUNE_BANK_PATH=/x in the job's environment conflicts with TUNE_BANK_PATH=%s set by the launcher" % BANK,
    ]


@pytest.mark.parametrize("mode", [1, 3, "7"])
def test_unsupported_aoe_mode_names_the_choices(mode):
    with pytest.raises(ValueError, match=r"AOE_MODE %s is not supported; choose 2 or 4" % mode):
        aoe_env(BANK, mode)


def test_aoe_mode_as_string_from_templating():
    assert aoe_env(None, "2") == {"AOE_MODE": "2"}


def test_a_jobs_ports_follow_its_hccl_if_base_port_as_the_preflight_does():
    from ansible_collections.ascend.cluster.plugins.module_utils._job.env import job_ports

    assert job_ports({}, 2) == {
        16666: "HCCL's device port",
        60000: "HCCL's host ports (HCCL_IF_BASE_PORT unset: 60000)",
        60001: "HCCL's host ports (HCCL_IF_BASE_PORT unset: 60000)",
    }
    assert sorted(job_ports({"HCCL_IF_BASE_PORT": "61000", "MASTER_PORT": "29500"}, 32)) == [16666, 29500] + list(range(61000, 61032))
    # the range's format is not in the reference: its host ports are not guessed; nor is a bad value read as a port
    assert job_ports({"HCCL_HOST_SOCKET_PORT_RANGE": "auto", "MASTER_PORT": "x"}, 16) == {16666: "HCCL's device port"}
    assert sorted(job_ports({"HCCL_IF_BASE_PORT": "65534"}, 16)) == [16666, 65534, 65535]
