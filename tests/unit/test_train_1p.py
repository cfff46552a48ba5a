"""The shell stand-in training (examples/train/train_1p.sh): its checkpoints, resume and fail-once fault.

Each rank is the script run with the environment the launcher gives it (RANK_ID, ...), one after
another: the ranks of the stand-in do not talk to each other, so order does not change what they
print - which is the point of the attempt-scoped step files (a rank that starts after rank 0 of its
attempt has written a new checkpoint still resumes from the same step as the others).
"""

from __future__ import annotations

import os
import re
import subprocess

from tests.helpers.collection import REPO_ROOT

SCRIPT = REPO_ROOT / "examples" / "train" / "train_1p.sh"
RESTART_VARS = ("ASCEND_RESTART_COUNT", "TORCHELASTIC_RESTART_COUNT", "RANK_ID", "RANK", "FAIL_RANK", "STALL_RANK")


def rank(rank_id: int | None, **env: str) -> subprocess.CompletedProcess:
    run_env = {k: v for k, v in os.environ.items() if k not in RESTART_VARS}
    run_env.update(STEP_S="0", **env)
    if rank_id is not None:
        run_env["RANK_ID"] = str(rank_id)
    return subprocess.run(["bash", str(SCRIPT)], env=run_env, capture_output=True, text=True, timeout=60, check=False)


def steps(out: str) -> list[int]:
    return [int(n) for n in re.findall(r"^step (\d+) loss \d+$", out, re.M)]


def test_a_job_stopped_after_a_checkpoint_resumes_every_rank_from_rank_0s_step_and_ends_at_the_right_step(tmp_path):
    ck, once = tmp_path / "ck", tmp_path / "failed-once"
    job = {
        "STEPS": "10",
        "CHECKPOINT_DIR": str(ck),
        "CHECKPOINT_EVERY": "3",
        "FAIL_RANK": "0",
        "FAIL_STEP": "8",
        "FAIL_ONCE_FILE": str(once),
    }
    first = [rank(r, ASCEND_RESTART_COUNT="0", **job) for r in (0, 1)]
    assert first[0].returncode == 1 and first[0].stderr == "rank 0 crashing at step 8\n", first[0]
    assert steps(first[0].stdout) == list(range(1, 8)) and f"no checkpoint in {ck}: starting at step 0\n" in first[0].stdout
    assert first[1].returncode == 0  # the launcher would have stopped it; alone it runs through and writes nothing
    assert once.exists() and sorted(p.name for p in ck.iterdir()) == ["train_1p.0.step"]
    assert (ck / "train_1p.0.step").read_text() == "step=6\n" and oct((ck / "train_1p.0.step").stat().st_mode & 0o777) == "0o644"

    second = [rank(r, ASCEND_RESTART_COUNT="1", **job) for r in (0, 1)]  # rank 1 starts after rank 0 wrote step 9
    for proc in second:
        assert proc.returncode == 0, proc
        assert "restart count 1\n" in proc.stdout
        assert f"resumed from step 6 (checkpoint {ck / 'train_1p.0.step'})\n" in proc.stdout
        assert steps(proc.stdout) == [7, 8, 9, 10]
    assert f"checkpoint step 9 written to {ck / 'train_1p.1.step'}\n" in second[0].stdout
    assert "written" not in second[1].stdout  # only rank 0 writes
    assert sorted(p.name for p in ck.iterdir()) == ["train_1p.0.step", "train_1p.1.step"]

    third = rank(5, TORCHELASTIC_RESTART_COUNT="2", **job)  # the next attempt reads attempt 1's file
    assert "restart count 2\n" in third.stdout and f"resumed from step 9 (checkpoint {ck / 'train_1p.1.step'})\n" in third.stdout
    assert steps(third.stdout) == [10]


def test_a_run_by_hand_resumes_from_the_newest_file_and_every_0_writes_none(tmp_path):
    ck = tmp_path / "ck"
    first = rank(None, STEPS="4", CHECKPOINT_DIR=str(ck), CHECKPOINT_EVERY="2")
    assert first.returncode == 0 and steps(first.stdout) == [1, 2, 3, 4], first  # no rank and no FAIL_RANK: no fault
    again = rank(None, STEPS="6", CHECKPOINT_DIR=str(ck), CHECKPOINT_EVERY="2")
    assert f"resumed from step 4 (checkpoint {ck / 'train_1p.0.step'})\n" in again.stdout and steps(again.stdout) == [5, 6]
    assert (ck / "train_1p.0.step").read_text() == "step=6\n"
    never = tmp_path / "never"
    quiet = rank(0, STEPS="4", CHECKPOINT_DIR=str(never), CHECKPOINT_EVERY="0")
    assert quiet.returncode == 0 and "restart count" not in quiet.stdout and not never.exists()
    plain = rank(0, STEPS="2")
    assert plain.returncode == 0 and "checkpoint" not in plain.stdout and steps(plain.stdout) == [1, 2]


def test_a_damaged_step_file_is_refused_naming_it(tmp_path):
    ck = tmp_path / "ck"
    ck.mkdir()
    (ck / "train_1p.0.step").write_text("step=6\n")
    (ck / "train_1p.1.step").write_text("step=")  # damaged: the newest earlier attempt's is the one read
    proc = rank(3, STEPS="10", CHECKPOINT_DIR=str(ck), ASCEND_RESTART_COUNT="2")
    assert proc.returncode == 1 and steps(proc.stdout) == [], proc
    assert proc.stderr == (
        f"train_1p.sh: checkpoint {ck / 'train_1p.1.step'} is damaged: 'step=' is not 'step=N' - it is not resumed from; "
        "remove it to resume from the attempt before\n"
    )
    (ck / "train_1p.1.step").unlink()
    assert "resumed from step 6 " in rank(3, STEPS="10", CHECKPOINT_DIR=str(ck), ASCEND_RESTART_COUNT="2").stdout


def test_bad_settings_are_named():
    proc = rank(0, CHECKPOINT_DIR="/nonexistent", CHECKPOINT_EVERY="x")
    assert proc.returncode == 2 and "CHECKPOINT_EVERY=x is not a number of steps" in proc.stderr
    proc = rank(0, CHECKPOINT_DIR="/nonexistent", ASCEND_RESTART_COUNT="one")
    assert proc.returncode == 2 and "restart count 'one' is not a number" in proc.stderr
