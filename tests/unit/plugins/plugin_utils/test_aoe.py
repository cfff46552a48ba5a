"""The launch role's AOE environment rule (filter aoe_env_conflict), table-driven."""

from __future__ import annotations

import pytest

from ansible_collections.ascend.cluster.plugins.plugin_utils._errors import ClusterSpecError
from ansible_collections.ascend.cluster.plugins.plugin_utils._launch.aoe import aoe_env_conflict

BANK = "/var/lib/ascend-cluster/tune_bank"


@pytest.mark.parametrize(
    "env, kwargs, conflict",
    [
        ({}, {}, ""),
        ({"STEPS": "3"}, {"aoe": True}, ""),
        ({"TUNE_BANK_PATH": BANK}, {}, ""),  # the same directory is no conflict
        ({"TUNE_BANK_PATH": BANK, "AOE_MODE": "4"}, {"aoe": True}, ""),
        ({"AOE_MODE": 4}, {"aoe": True, "aoe_mode": 4}, ""),  # a number or a string, the same mode
        ({"AOE_MODE": "2"}, {}, ""),  # not a tuning run: the role sets no AOE_MODE
        ({"TUNE_BANK_PATH": "/elsewhere"}, {"use_library": False}, ""),  # unmanaged on purpose
        (
            {"TUNE_BANK_PATH": "/elsewhere"},
            {},
            f"on s1 sets TUNE_BANK_PATH=/elsewhere but the role sets TUNE_BANK_PATH={BANK}: set ascend_aoe_bank_dir",
        ),
        ({"TUNE_BANK_PATH": "/elsewhere"}, {"use_library": True}, "sets TUNE_BANK_PATH=/elsewhere but the role sets"),
        (
            {"TUNE_BANK_PATH": "/elsewhere"},
            {"aoe": True, "use_library": False},  # tuning always manages the bank
            f"sets TUNE_BANK_PATH=/elsewhere but the role sets TUNE_BANK_PATH={BANK}, AOE_MODE=4:",
        ),
        (
            {"X": "1", "AOE_MODE": "2", "TUNE_BANK_PATH": BANK},
            {"aoe": True},
            f"sets AOE_MODE=2, TUNE_BANK_PATH={BANK} but the role sets TUNE_BANK_PATH={BANK}, AOE_MODE=4:",
        ),
        ({"AOE_MODE": "four"}, {"aoe": True}, "sets AOE_MODE=four but"),
        # the job environment of tests/integration/test_launch_aoe.py: a tuning run's own AOE_MODE among other variables
        (
            {"STEPS": "2", "AOE_MODE": "2", "ASCEND_SIM_STATE": "/sim/server0/state"},
            {"aoe": True},
            f"on s1 sets AOE_MODE=2 but the role sets TUNE_BANK_PATH={BANK}, AOE_MODE=4: set ascend_aoe_bank_dir",
        ),
    ],
)
def test_conflicts(env, kwargs, conflict):
    got = aoe_env_conflict(env, BANK, server="s1", **kwargs)
    if not conflict:
        assert got == ""
    else:
        assert conflict in got
        assert got.endswith("or use_library=false to pass your own TUNE_BANK_PATH unmanaged. Nothing was started.")


def test_bad_environment_is_named():
    with pytest.raises(ClusterSpecError, match="the job's environment must be a mapping"):
        aoe_env_conflict(["TUNE_BANK_PATH=/x"], BANK)  # type: ignore[arg-type]  # what a template may hand it


@pytest.mark.parametrize(
    "aoe, use_library, reads, manages",
    [
        (False, None, True, True),  # training: the repository is used where it is on every server
        (False, True, True, True),
        (False, False, False, False),  # training without it: TUNE_BANK_PATH is the user's
        (True, None, False, True),  # tuning writes it
        (True, False, False, True),
    ],
)
def test_one_rule_says_which_runs_read_and_which_manage_the_repository(aoe, use_library, reads, manages):
    from ansible_collections.ascend.cluster.plugins.plugin_utils._launch.aoe import manages_bank, reads_bank

    assert reads_bank(aoe, use_library) is reads
    assert manages_bank(aoe, use_library) is manages
