"""The launch's folded actions: training_job's clock options (taken out of the module's arguments, converted),
controller_file's directory step, and the tuning repository count of the pre-flight."""

from __future__ import annotations

import os
import stat

import pytest

from ansible_collections.ascend.cluster.plugins.action.controller_file import make_directory
from ansible_collections.ascend.cluster.plugins.action.training_job import clock_options, merged
from ansible_collections.ascend.cluster.plugins.module_utils._job.preflight import tune_bank_files


@pytest.mark.parametrize(
    ("args", "taken", "left"),
    [
        (
            {"state": "preflight"},
            {"clock_samples": 0, "clock_warn_above": 1.0, "clock_refuse_above": 30.0, "clock_allow": False},
            {"state": "preflight"},
        ),
        (
            {
                "state": "preflight",
                "clock_samples": "5",
                "clock_warn_above": "0.5",
                "clock_refuse_above": 30,
                "clock_allow": "yes",
                "devices": [1],
            },
            {"clock_samples": 5, "clock_warn_above": 0.5, "clock_refuse_above": 30.0, "clock_allow": True},
            {"state": "preflight", "devices": [1]},
        ),
    ],
    ids=["defaults", "templated strings"],
)
def test_clock_options_are_taken_out_and_converted(args, taken, left):
    args = dict(args)
    assert clock_options(args) == taken
    assert args == left


@pytest.mark.parametrize(("name", "value"), [("clock_samples", "five"), ("clock_warn_above", "soon"), ("clock_allow", "maybe")])
def test_bad_clock_options_are_refused_naming_them(name, value):
    with pytest.raises(ValueError, match=name):
        clock_options({name: value})


def test_merged_keeps_the_warnings_of_the_clock_and_of_the_module():
    assert merged({"warnings": ["clock"], "clock": {}}, {"warnings": ["chip"], "busy": []}) == {
        "warnings": ["clock", "chip"],
        "clock": {},
        "busy": [],
    }
    assert merged({}, {"busy": []}) == {"busy": []}


def test_make_directory_makes_then_fixes_the_mode_then_does_nothing(tmp_path):
    path = str(tmp_path / "a" / "b")
    assert make_directory(path, 0o755, check_mode=True) == ["mkdir"] and not os.path.exists(path)
    assert make_directory(path, 0o755, check_mode=False) == ["mkdir"]
    os.chmod(path, 0o700)
    assert make_directory(path, 0o755, check_mode=False) == ["chmod"]
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o755
    assert make_directory(path, 0o755, check_mode=False) == []


def test_tune_bank_files_counts_only_the_repository_files(tmp_path):
    (tmp_path / "Ascend910B1_gradient_fusion.json").write_text("{}")
    (tmp_path / "other.json").write_text("{}")
    (tmp_path / "x_gradient_fusion.json").mkdir()  # a directory is not a repository file
    assert tune_bank_files(str(tmp_path)) == [str(tmp_path / "Ascend910B1_gradient_fusion.json")]
    assert tune_bank_files(str(tmp_path / "missing")) == []


def test_the_gate_command_writes_what_the_runners_read_and_moves_latest(tmp_path):
    import subprocess

    from ansible_collections.ascend.cluster.plugins.module_utils._job import files

    root = tmp_path / "job root"
    (root / "j1").mkdir(parents=True)
    (root / "j1" / files.JOB_FILE).write_text("{}")
    out = subprocess.run(["sh", "-c", files.gate_command(str(root), "j1", 1800000000.25)], capture_output=True, text=True, check=False)
    assert files.parse_gate(out.stdout) is None, out
    assert files.read_json(str(root / "j1" / files.GATE_FILE)) == {"start_at": 1800000000.25}
    assert (root / "j1" / files.GATE_FILE).read_text() == files.gate_text(1800000000.25)
    assert files.read_latest(str(root)) == "j1"
    assert not list(root.glob("**/*.tmp"))


@pytest.mark.parametrize(
    ("stdout", "problem"),
    [("", "no answer"), ("job j2 is not recorded under /r on this host\n", "job j2 is not recorded under /r on this host")],
)
def test_a_gate_that_was_not_opened_says_why(tmp_path, stdout, problem):
    import subprocess

    from ansible_collections.ascend.cluster.plugins.module_utils._job import files

    assert files.parse_gate(stdout) == problem
    out = subprocess.run(["sh", "-c", files.gate_command(str(tmp_path), "j2", 1.0)], capture_output=True, text=True, check=False)
    assert out.returncode == 3 and files.parse_gate(out.stdout) == f"job j2 is not recorded under {tmp_path} on this host"
    assert not (tmp_path / "latest").exists()
