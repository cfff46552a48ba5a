"""The step a rank resumed from (module_utils/_job/results.resumed_from): the one place the stand-ins' resume line is read,
for the restart records' ``resumed_step`` (docs/launch.md, Restarts)."""

from __future__ import annotations

import pytest

from ansible_collections.ascend.cluster.plugins.module_utils._job import results


@pytest.mark.parametrize(
    ("text", "step"),
    [
        # train_1p.sh and train_gloo.py
        ("start rank=0 device=0 size=16\nrestart count 1\nresumed from step 6 (checkpoint /ckpt/train_1p.0.step)\nstep 7 loss 93\n", 6),
        ("resumed from step 12 (checkpoint /ckpt/step_00000012.pt)\n", 12),
        # hccl_standin.py prefixes its lines
        ("hccl_standin: restart count 1\nhccl_standin: resumed from step 10 (checkpoint /c/step_00000010.json)\n", 10),
        # CRLF, and the first such line counts
        ("resumed from step 3 (checkpoint a)\r\nresumed from step 9 (checkpoint b)\r\n", 3),
        # no checkpoint, or a line that only mentions it
        ("hccl_standin: no checkpoint in /c: starting at step 0\n", None),
        ("the run was not resumed from step 4 (checkpoint x)\n", None),
        ("", None),
    ],
)
def test_the_resume_line_of_each_stand_in_gives_the_step(tmp_path, text, step):
    log = tmp_path / "train.log"
    log.write_bytes(text.encode())
    assert results.resumed_from(str(log)) == step


def test_a_servers_ranks_resumed_steps_and_a_missing_log(tmp_path):
    for rank, text in ((0, "resumed from step 6 (checkpoint c)\n"), (1, "no checkpoint in d: starting at step 0\n")):
        (tmp_path / f"device_{rank}").mkdir()
        (tmp_path / f"device_{rank}" / "train.log").write_text(text)
    ranks = [{"rank_id": 0}, {"rank_id": 1}, {"rank_id": 2}]  # rank 2 never wrote a log
    assert results.resumed_steps(str(tmp_path), ranks) == {0: 6}
