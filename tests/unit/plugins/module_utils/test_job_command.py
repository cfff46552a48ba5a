"""_job_command: the training command split like a shell splits words, and what is refused."""

from __future__ import annotations

import re

import pytest

from ansible_collections.ascend.cluster.plugins.module_utils._job.command import check_argv, resolve_launch, split_command


@pytest.mark.parametrize(
    "command, argv",
    [
        ("bash train_1p.sh --data_path=/data", ["bash", "train_1p.sh", "--data_path=/data"]),
        ("python3 'my train.py' --lr \"0.1 0.2\"", ["python3", "my train.py", "--lr", "0.1 0.2"]),
        ("/opt/bin/train", ["/opt/bin/train"]),  # one word that is not a bare interpreter is a command
        ("echo $HOME; rm -rf /", ["echo", "$HOME;", "rm", "-rf", "/"]),  # never a shell: words only
    ],
)
def test_split(command, argv):
    assert split_command(command) == argv


@pytest.mark.parametrize(
    "command, message",
    [
        ("'unbalanced", "cannot split the training command \"'unbalanced\": No closing quotation"),
        ("", "the training command is empty: set train_command"),
        ("   ", "the training command is empty"),
        ("bash", "the training command is only 'bash', which would exit at once"),
        ("/usr/bin/python3", "write -e 'train_command=\"/usr/bin/python3 train.sh ...\"'"),
        ("torchrun", "your shell removed the quotes and Ansible kept only the first word"),
    ],
)
def test_refused(command, message):
    with pytest.raises(ValueError) as info:
        split_command(command)
    assert message in str(info.value)


def test_argv_lists_get_the_same_checks():
    assert check_argv(["bash", "train.sh"]) == ["bash", "train.sh"]
    with pytest.raises(ValueError, match="only 'sh'"):
        check_argv(["sh"])
    with pytest.raises(ValueError, match="empty"):
        check_argv([])


BANK = "/var/lib/ascend-cluster/tune_bank"


@pytest.mark.parametrize(
    "params, argv",
    [
        ({"command": "bash train.sh --data_path='/d d'", "argv": None, "env": {}}, ["bash", "train.sh", "--data_path=/d d"]),
        ({"command": None, "argv": ["python3", "t.py"], "env": {"TUNE_BANK_PATH": BANK}, "tune_bank_path": BANK}, ["python3", "t.py"]),
    ],
)
def test_resolve_launch_sets_argv(params, argv):
    resolve_launch(params)
    assert params["argv"] == argv


@pytest.mark.parametrize(
    "params, message",
    [
        ({"command": "bash", "env": {}}, "the training command is only 'bash'"),
        ({"command": "bash 'x", "env": {}}, "cannot split the training command"),
        ({"command": None, "argv": [], "env": {}}, "the training command is empty"),
        (
            {"command": "bash t.sh", "env": {"AOE_MODE": "2"}, "tune_bank_path": BANK, "aoe_mode": 4},
            "AOE_MODE=2 in the job's environment conflicts with AOE_MODE=4 set by the launcher",
        ),
    ],
)
def test_resolve_launch_refuses(params, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        resolve_launch(params)
