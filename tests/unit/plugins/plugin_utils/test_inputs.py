"""plugin_utils._inputs and the input_problems filter: a playbook's -e interface checked before anything runs."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.ascend.cluster.plugins.filter.common import FilterModule, input_problems
from ansible_collections.ascend.cluster.plugins.plugin_utils import _inputs

TRAIN = {
    "np": {"type": "int", "min": 1},
    "npu_env": {"type": "str"},
    "train_command": {"type": "command", "required": True, "required_unless": ["ascend_train_argv"]},
    "framework": {"type": "str", "choices": ["mindspore", "pytorch"]},
    "wait": {"type": "bool"},
    "kill_stale": {"type": "bool"},
    "use_library": {"type": "bool"},
    "job_id": {"type": "str"},
    "progress_regex": {"type": "regex"},
    "min_gbps": {"type": "number", "min": 0},
}
CMD = {"train_command": "bash train.sh"}


def test_filter_is_registered_under_its_name():
    assert FilterModule().filters()["input_problems"] is input_problems


@pytest.mark.parametrize(
    "given, problems",
    [
        ({"np": 16, **CMD}, []),
        ({"np": "16", "wait": "false", "kill_stale": "yes", "use_library": None, **CMD}, []),  # key=value gives strings
        ({"np": True, **CMD}, ["np=True is not a whole number of at least 1: write for example -e np=16"]),
        ({"np": "abc", **CMD}, ["np='abc' is not a whole number of at least 1: write for example -e np=16"]),
        ({"np": 0, **CMD}, ["np=0 is not a whole number of at least 1: write for example -e np=16"]),
        ({"min_gbps": "12.5", **CMD}, []),  # a decimal floor (smoke's collective_min_gbps)
        ({"min_gbps": 20, **CMD}, []),
        ({"min_gbps": "fast", **CMD}, ["min_gbps='fast' is not a number of at least 0: write for example -e min_gbps=12.5"]),
        ({"min_gbps": -1, **CMD}, ["min_gbps=-1 is not a number of at least 0"]),
        ({"min_gbps": True, **CMD}, ["min_gbps=True is not a number of at least 0"]),
        ({"nps": 16, **CMD}, ["unknown extra var 'nps': did you mean np?"]),
        ({"framwork": "pytorch", **CMD}, ["unknown extra var 'framwork': did you mean framework?"]),
        ({"kill_stall": True, **CMD}, ["unknown extra var 'kill_stall': did you mean kill_stale?"]),
        ({"framework": "unknown", **CMD}, ["framework='unknown' is not one of mindspore, pytorch"]),
        ({"wait": "maybe", **CMD}, ["wait='maybe' is not true or false: write -e wait=true or -e wait=false"]),
        ({"npu_env": ["a"], **CMD}, ["npu_env=['a'] is not a string"]),
        ({"train_command": "'unbalanced"}, ["train_command: cannot split the training command \"'unbalanced\": No closing quotation"]),
        ({"train_command": "bash"}, ["train_command: the training command is only 'bash'"]),
        ({"progress_regex": r"step \d+", **CMD}, []),
        ({"progress_regex": "", **CMD}, []),
        ({"progress_regex": "step (", **CMD}, ["progress_regex 'step (' is not a valid regular expression (missing )"]),
        ({"np": 4}, ["train_command is required (or ascend_train_argv)"]),
        ({"np": 4, "train_command": ""}, ["train_command is required (or ascend_train_argv)"]),
        ({"np": 4, "train_command": " \t"}, ["train_command is required (or ascend_train_argv)"]),
        ({"np": 4, "ascend_train_argv": ["python3", "x.py"]}, []),
        # not ours and not close to ours: role variables, inventory templating
        ({"ascend_launch_job_root": "/x", "ascend_sim_root": "/y", "job": 1, **CMD}, []),
    ],
)
def test_problems(given, problems):
    found = _inputs.input_problems(given, TRAIN)
    assert len(found) == len(problems), found
    for text, expected in zip(found, problems):
        assert text.startswith(expected), found


def test_every_problem_at_once_sorted_by_name_then_the_missing():
    found = _inputs.input_problems({"nps": 1, "framework": "x"}, TRAIN)
    assert [p.split(" ")[0] for p in found] == ["framework='x'", "unknown", "train_command"]


def test_a_stand_in_from_the_inventory_satisfies_required():
    assert _inputs.input_problems({}, TRAIN, present=["ascend_train_argv"]) == []


@pytest.mark.parametrize(
    "hosts, pattern, problem",
    [
        (["server0"], "ascend", None),
        ([], "ascend", "no host selected: the pattern 'ascend' (-e ascend_hosts=...) matches no host"),
        ([], "gpu*", "no host selected: the pattern 'gpu*'"),
        (None, "ascend", None),  # not asked
    ],
)
def test_no_selected_host_names_the_pattern_and_the_override(hosts, pattern, problem):
    found = _inputs.input_problems({}, {}, hosts=hosts, pattern=pattern)
    if problem is None:
        assert found == []
    else:
        assert len(found) == 1 and found[0].startswith(problem)
        assert "-e ascend_hosts=<pattern>" in found[0]


@pytest.mark.parametrize(
    "given, declared, message",
    [
        ([], {}, "must be mappings"),
        ({}, {"np": {"type": "float"}}, "input 'np': the declaration needs a type"),
        ({}, {"np": "int"}, "input 'np': the declaration needs a type"),
    ],
)
def test_bad_declarations_are_named(given, declared, message):
    with pytest.raises(AnsibleFilterError, match=f"input_problems: .*{message}"):
        input_problems(given, declared)


def test_markdown_lists_each_input_with_type_default_and_what_a_bad_value_gets():
    table = _inputs.inputs_markdown(
        {
            "np": {"type": "int", "min": 1, "description": "ranks"},
            "framework": {"type": "str", "choices": ["mindspore", "pytorch"], "default": "mindspore"},
            "train_command": {"type": "command", "required": True},
            "wait": {"type": "bool", "default": True},
        }
    ).splitlines()
    assert table[0] == "| -e | type | default | meaning | a bad value gets |"
    assert table[2].startswith("| `np` | int | unset | ranks | np='abc' is not a whole number of at least 1")
    assert table[3].startswith("| `framework` | str (mindspore, pytorch) | mindspore |  | framework='unknown' is not one of")
    assert table[4].startswith("| `train_command` | command | required |  | train_command: the training command is only 'bash'")
    assert table[5] == "| `wait` | bool | true |  | wait='maybe' is not true or false: write -e wait=true or -e wait=false |"
