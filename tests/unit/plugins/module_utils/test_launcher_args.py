"""module_utils._job.launcher_args and the launcher_args_refusal filter: ascend_launch_launcher_args checked against what the
launch relies on (its own options, where the logs it copies are written), before anything starts."""

from __future__ import annotations

import pytest

from ansible_collections.ascend.cluster.plugins.filter.launch import FilterModule, launcher_args_refusal
from ansible_collections.ascend.cluster.plugins.module_utils._job.launcher_args import REFUSED, refusals


def test_filter_is_registered_under_its_name():
    assert FilterModule().filters()["launcher_args_refusal"] is launcher_args_refusal


def test_msruns_worker_log_name_is_refused_naming_why():
    [problem] = refusals("msrun", ["--worker_log_name=worker_{ip}_{hostname}"])
    assert problem.startswith("ascend_launch_launcher_args: msrun --worker_log_name is refused: ")
    assert "<log_dir>/worker_<rank>.log" in problem and "train.log" in problem


@pytest.mark.parametrize(
    "launcher, arg, option",
    [
        ("torchrun", "--master-port=29600", "--master-port"),
        ("torchrun", "--master_port", "--master-port"),  # torchrun's other spelling
        ("torchrun", "--nproc_per_node=8", "--nproc-per-node"),
        ("torchrun", "--master-p=1", "--master-port"),  # argparse expands an unambiguous prefix
        ("torchrun", "--log-dir=/tmp/x", "--log-dir"),
        ("torchrun", "-r", "--redirects"),
        ("torchrun", "-m", "--module"),
        ("torchrun", "--max-restarts=3", "--max-restarts"),
        ("torchrun", "--rdzv-backend=c10d", "--rdzv-backend"),
        ("torchrun", "--standalone", "--standalone"),
        ("msrun", "--log_dir", "--log_dir"),
        ("msrun", "--join=False", "--join"),
        ("msrun", "--worker_log", "--worker_log_name"),
        ("msrun", "--node_rank=3", "--node_rank"),
    ],
)
def test_each_option_the_launch_relies_on_is_refused(launcher, arg, option):
    [problem] = refusals(launcher, [arg, "value"])
    assert f"{launcher} {arg.split('=')[0]}" in problem and option in problem


@pytest.mark.parametrize(
    "launcher, args",
    [
        ("torchrun", ["--monitor-interval=1", "--tee=3", "--local-ranks-filter=0", "--rdzv-id=j1", "--start-method", "spawn"]),
        ("torchrun", ["--role=trainer", "--log-line-prefix-template=[${rank}]"]),
        ("msrun", ["--cluster_time_out=900", "--bind_core=True", "--tail_worker_log=0"]),
        ("per_device", ["--log-dir=/x", "--worker_log_name=y"]),  # no launcher runs: nothing to refuse
        ("torchrun", ["--", "--log-dir=/x"]),  # after --: the training command's own
        ("torchrun", []),
    ],
)
def test_everything_else_passes(launcher, args):
    assert refusals(launcher, args) == []
    assert launcher_args_refusal(args, launcher=launcher) == ""


def test_every_refusal_says_why_and_the_filter_joins_them():
    assert all(why for table in REFUSED.values() for why in table.values())
    joined = launcher_args_refusal(["--log-dir=/x", "--nnodes=3"], launcher="torchrun")
    assert joined.count("is refused") == 2 and "; " in joined
