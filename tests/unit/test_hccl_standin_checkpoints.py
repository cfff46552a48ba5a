"""The HCCL stand-in's checkpoints and restarts (examples/train/hccl_standin.py): files read back and refused, written
whole, the restart count, and ranks on loopback that resume from a checkpoint (docs/hccl-standin.md)."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from tests.helpers.procs import finish
from tests.unit.test_hccl_standin import hs, loopback_in, start_rank


@pytest.fixture
def loopback(tmp_path):
    """The stand-in tests' addresses, port and rank table writer (test_hccl_standin.py)."""
    return loopback_in(tmp_path)


# --------------------------------------------------------------------------- checkpoints and restarts


def test_a_checkpoint_reads_back_and_every_kind_of_damage_is_refused_naming_the_file(tmp_path):
    state = hs.next_state(bytes(32), 1, b"r" * 32)
    good = hs.encode_checkpoint(4, state, 2, 1024, 2024)
    assert hs.decode_checkpoint(good, "c.json")[:2] == (4, state)
    fields = json.loads(good)
    damaged = {
        "cut short": good[: len(good) // 2],
        "empty": b"",
        "step edited": json.dumps(dict(fields, step=5)).encode(),
        "state edited": json.dumps(dict(fields, state_sha256="0" * 64)).encode(),
        "another file": json.dumps({"step": 4}).encode(),
    }
    bad_step = {k: v for k, v in fields.items() if k != "sha256"}
    bad_step["step"] = -4
    damaged["its sum matches, its step is negative"] = json.dumps(dict(bad_step, sha256=hs._checkpoint_sum(bad_step))).encode()
    for why, data in damaged.items():
        with pytest.raises(hs.HcclError) as caught:
            hs.decode_checkpoint(data, "/ck/step_00000004.json")
        assert caught.value.cause.startswith("checkpoint /ck/step_00000004.json is damaged: "), why
        assert caught.value.cause.endswith("it is not resumed from; move it aside to resume from the one before it"), why


def test_checkpoints_are_written_whole_with_mode_0644_and_the_newest_two_kept(tmp_path):
    directory = tmp_path / "ck" / "deeper"
    old_umask = os.umask(0o077)
    try:
        for step in (2, 4, 6):
            hs.write_atomically(str(directory / f"step_{step:08d}.json"), hs.encode_checkpoint(step, bytes(32), 1, 1, 1))
            hs.prune_checkpoints(str(directory), hs.CHECKPOINT_NAME)
    finally:
        os.umask(old_umask)
    (directory / ".step_00000008.json.tmp-4242").write_text('{"half')  # a writer that died mid-write
    assert sorted(p.name for p in directory.iterdir()) == [".step_00000008.json.tmp-4242", "step_00000004.json", "step_00000006.json"]
    assert all(oct(p.stat().st_mode & 0o777) == "0o644" for p in directory.glob("step_*"))
    assert [step for step, _path in hs.checkpoint_files(str(directory), hs.CHECKPOINT_NAME)] == [4, 6]
    path, step, _state, fields = hs.read_newest_checkpoint(str(directory))
    assert (path, step, fields["ranks"]) == (str(directory / "step_00000006.json"), 6, 1)
    assert hs.read_newest_checkpoint(str(tmp_path / "none")) is None
    (tmp_path / "a-file").write_text("")
    with pytest.raises(hs.HcclError, match=r"^cannot read the checkpoints in .*/a-file \(\[Errno 20\] Not a directory: '.*/a-file'\)$"):
        hs.read_newest_checkpoint(str(tmp_path / "a-file"))


def test_fail_once_and_the_restart_count(tmp_path):
    once = str(tmp_path / "once")
    assert hs.fail_once(once) and not hs.fail_once(once)
    assert hs.restart_count({}) is None and hs.restart_count({"ASCEND_RESTART_COUNT": ""}) is None
    assert hs.restart_count({"TORCHELASTIC_RESTART_COUNT": "3"}) == "3"
    assert hs.restart_count({"ASCEND_RESTART_COUNT": "1", "TORCHELASTIC_RESTART_COUNT": "3"}) == "1"


def _two_ranks(tmp_path: Path, path: Path, args: tuple, rank1_args: tuple = (), **env: str) -> list:
    common = {"HCCL_EXEC_TIMEOUT": "3", **env}
    return finish(
        [start_rank(tmp_path, path, 0, 0, "0.05", args, **common), start_rank(tmp_path, path, 1, 0, "0.05", args + rank1_args, **common)]
    )


def _final_state(stdout: str) -> tuple:
    match = re.search(r"^hccl_standin: final state sha256 ([0-9a-f]{64}) after step (\d+)$", stdout, re.M)
    assert match, stdout
    return match.group(1), int(match.group(2))


def test_a_run_stopped_after_a_checkpoint_resumes_from_it_on_every_rank_and_ends_as_an_uninterrupted_run(loopback, tmp_path):
    """Rank 1 fails before all-reduce 6 (once); the next attempt resumes both ranks from rank 0's checkpoint of step 4.

    Rank 1 names a checkpoint directory of its own that stays empty: what it resumes from came from rank 0.
    """
    base, _port, write = loopback
    path = write([("10.0.0.1", [(0, base + ".1")]), ("10.0.0.2", [(0, base + ".2")])])
    plain = _two_ranks(tmp_path, path, ("--iters", "8", "--step-log"))
    assert [rc for rc, _out, _err in plain] == [0, 0], plain
    uninterrupted = {_final_state(out) for _rc, out, _err in plain}
    assert len(uninterrupted) == 1 and next(iter(uninterrupted))[1] == 8

    ck, elsewhere, once = tmp_path / "ck", tmp_path / "rank1-ck", tmp_path / "failed-once"
    args: tuple = ("--iters", "8", "--step-log", "--checkpoint-dir", str(ck), "--checkpoint-every", "2")
    args += ("--fail-rank", "1", "--fail-step", "6", "--fail-once-file", str(once))
    first = _two_ranks(tmp_path, path, args, ("--checkpoint-dir", str(elsewhere)), ASCEND_RESTART_COUNT="0")
    assert [rc for rc, _out, _err in first] == [1, 1], first
    assert "no checkpoint in %s: starting at step 0" % ck in first[0][1] and "restart count 0" in first[0][1]
    assert first[1][2].rstrip().endswith("hccl_standin: rank 1 failing on purpose before all-reduce 6 (--fail-rank, a stand-in fault)")
    assert sorted(p.name for p in ck.iterdir()) == ["step_00000002.json", "step_00000004.json"] and not elsewhere.exists()

    second = _two_ranks(tmp_path, path, args, ("--checkpoint-dir", str(elsewhere)), ASCEND_RESTART_COUNT="1")
    for rank, (rc, out, err) in enumerate(second):
        assert rc == 0, (rank, out, err)
        assert "hccl_standin: restart count 1\n" in out
        assert f"hccl_standin: resumed from step 4 (checkpoint {ck / 'step_00000004.json'})\n" in out
        assert re.findall(r"^hccl_standin: step (\d+) all-reduce done", out, re.M) == ["5", "6", "7", "8"]
        assert _final_state(out) == next(iter(uninterrupted))
        result = json.loads(next(line for line in out.splitlines() if line.startswith("HCCL_STANDIN_RESULT "))[20:])
        assert (result["resumed_from"], result["step"], result["iters"]) == (4, 8, 4)
    assert sorted(p.name for p in ck.iterdir()) == ["step_00000006.json", "step_00000008.json"] and not elsewhere.exists()


def test_a_damaged_checkpoint_fails_every_rank_naming_it(loopback, tmp_path):
    base, _port, write = loopback
    path = write([("10.0.0.1", [(0, base + ".1")]), ("10.0.0.2", [(0, base + ".2")])])
    ck = tmp_path / "ck"
    ck.mkdir()
    good = hs.encode_checkpoint(2, bytes(32), 2, 1, 2024)
    (ck / "step_00000002.json").write_bytes(good)
    (ck / "step_00000004.json").write_bytes(good[:-20])
    results = _two_ranks(tmp_path, path, ("--iters", "6", "--checkpoint-dir", str(ck)))
    cause = f"checkpoint {ck / 'step_00000004.json'} is damaged: it is not JSON (cut short?) - it is not resumed from"
    assert [rc for rc, _out, _err in results] == [1, 1], results
    assert results[0][2].rstrip().splitlines()[-1].startswith("hccl_standin: " + cause), results[0][2]
    assert results[1][2].rstrip().splitlines()[-1].startswith("hccl_standin: rank 0 refused its checkpoint: " + cause), results[1][2]
    assert not any("all-reduce done" in out or "resumed" in out for _rc, out, _err in results)
