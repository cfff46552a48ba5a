"""examples/train/train_gloo.py's checkpoints: a run stopped after one resumes from it and ends as an uninterrupted run.

Two ranks on this machine's loopback, started the way the launcher's ``pytorch`` preset starts them
(MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK, LOCAL_RANK), with the PyTorch of build/torch-venv.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
from pathlib import Path

import pytest

from ansible_collections.ascend.cluster.plugins.module_utils._job.torch_error import innermost_frame, read_error_file
from tests.helpers.collection import REPO_ROOT
from tests.helpers.procs import finish

SCRIPT = REPO_ROOT / "examples" / "train" / "train_gloo.py"
TORCH_PYTHON = REPO_ROOT / "build" / "torch-venv" / "bin" / "python"
STEPS = 12


@pytest.fixture(autouse=True)
def _torch() -> None:
    assert TORCH_PYTHON.exists(), "build/torch-venv is missing: run `make torch-venv`"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def job(tmp_path: Path, name: str, args: list[str], rank1_args: tuple[str, ...] = (), **env: str) -> list[tuple[int, str, str]]:
    """Both ranks of one run, each in its own working directory ``tmp_path/name/rank<r>``: ``[(rc, stdout, stderr)]``."""
    port = str(_free_port())
    procs = []
    for rank in (0, 1):
        cwd = tmp_path / name / f"rank{rank}"
        cwd.mkdir(parents=True)
        rank_env = {k: v for k, v in os.environ.items() if k not in ("ASCEND_RESTART_COUNT", "TORCHELASTIC_RESTART_COUNT")}
        rank_env.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=port, WORLD_SIZE="2", RANK=str(rank), LOCAL_RANK=str(rank))
        rank_env.update(GLOO_SOCKET_IFNAME="lo", OMP_NUM_THREADS="1", HCCL_CONNECT_TIMEOUT="60", **env)
        argv = [str(TORCH_PYTHON), str(SCRIPT), "--steps", str(STEPS), *args, *(rank1_args if rank == 1 else ())]
        procs.append(subprocess.Popen(argv, cwd=cwd, env=rank_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    return finish(procs, timeout=120)


def losses(stdout: str) -> dict[int, str]:
    return {int(step): loss for step, loss in re.findall(r"^step (\d+) loss ([0-9.]+)$", stdout, re.M)}


def digest(stdout: str) -> str:
    [found] = re.findall(r"^final weights sha256 ([0-9a-f]{64})$", stdout, re.M)
    return found


def test_a_run_stopped_after_a_checkpoint_resumes_from_it_and_a_damaged_one_is_refused(tmp_path):
    """Rank 1 fails at step 8 (once); the next attempt resumes from rank 0's checkpoint of step 6 (every 3 steps).

    Rank 1 names a checkpoint directory of its own, which stays empty: rank 0 read the checkpoint and
    sent it over the process group. The resumed steps' losses and the final weights are the
    uninterrupted run's exactly, which needs the momentum buffers restored as well as the weights.
    """
    plain = job(tmp_path, "plain", [])
    assert [rc for rc, _out, _err in plain] == [0, 0], plain
    reference = losses(plain[0][1])
    assert sorted(reference) == list(range(1, STEPS + 1)) and reference[STEPS] < reference[1]
    assert digest(plain[0][1]) == digest(plain[1][1])

    ck, elsewhere, once = tmp_path / "ck", tmp_path / "rank1-ck", tmp_path / "failed-once"
    args = ["--checkpoint-dir", str(ck), "--checkpoint-every", "3", "--fail-rank", "1", "--fail-step", "8", "--fail-once-file", str(once)]
    error_file = tmp_path / "error.json"  # what the launch's pytorch preset names TORCHELASTIC_ERROR_FILE (rank 0 never writes it)
    first = job(
        tmp_path, "attempt0", args, ("--checkpoint-dir", str(elsewhere)), ASCEND_RESTART_COUNT="0", TORCHELASTIC_ERROR_FILE=str(error_file)
    )
    assert first[1][0] == 1 and "rank 1 failing on purpose at step 8\n" in first[1][1], first[1]
    # torch's own error handler wrote the file; the diagnosis's reader takes the exception and the frame that raised it
    recorded = read_error_file(str(error_file))
    assert recorded is not None and recorded["exception"] == "RuntimeError: rank 1 failing on purpose at step 8", recorded
    assert recorded["traceback"][0] == "Traceback (most recent call last):" and recorded["timestamp"] > 0
    assert 'train_gloo.py", line ' in (innermost_frame(recorded["traceback"]) or ""), recorded
    assert first[0][0] != 0 and f"no checkpoint in {ck}: starting at step 0\n" in first[0][1] and "restart count 0\n" in first[0][1]
    assert f"checkpoint step 6 written to {ck / 'step_00000006.pt'}\n" in first[0][1]
    assert sorted(p.name for p in ck.iterdir()) == ["step_00000003.pt", "step_00000006.pt"] and not elsewhere.exists()
    assert all(oct(p.stat().st_mode & 0o777) == "0o644" for p in ck.iterdir())

    second = job(tmp_path, "attempt1", args, ("--checkpoint-dir", str(elsewhere)), ASCEND_RESTART_COUNT="1")
    for rank, (rc, out, err) in enumerate(second):
        assert rc == 0, (rank, out, err)
        assert "restart count 1\n" in out
        assert f"resumed from step 6 (checkpoint {ck / 'step_00000006.pt'})\n" in out
        assert sorted(losses(out)) == list(range(7, STEPS + 1))
        assert digest(out) == digest(plain[rank][1])
    assert losses(second[0][1]) == {step: loss for step, loss in reference.items() if step > 6}
    assert sorted(p.name for p in ck.iterdir()) == ["step_00000009.pt", "step_00000012.pt"] and not elsewhere.exists()

    # A damaged newest checkpoint stops every rank naming it (rank 0 reads it; rank 1 is told why), torchelastic's
    # restart count is printed; once the operator moves it aside, the one before it is resumed from.
    newest = ck / "step_00000012.pt"
    newest.write_bytes(newest.read_bytes()[:-100])  # cut short (the rename makes this storage damage, not a crash)
    refused = job(tmp_path, "refused", ["--checkpoint-dir", str(ck)], TORCHELASTIC_RESTART_COUNT="2")
    cause = f"checkpoint {newest} is damaged: "
    assert [rc for rc, _out, _err in refused] == [1, 1], refused
    assert all("restart count 2\n" in out and not losses(out) for _rc, out, _err in refused)
    assert refused[0][2].startswith(f"train_gloo: {cause}") and "(cut short?) - it is not resumed from" in refused[0][2], refused[0][2]
    assert refused[1][2].startswith(f"train_gloo: rank 0 refused its checkpoint: {cause}"), refused[1][2]
    newest.unlink()
    resumed = job(tmp_path, "resumed", ["--checkpoint-dir", str(ck), "--checkpoint-every", "0"])
    assert [rc for rc, _out, _err in resumed] == [0, 0], resumed
    assert all(f"resumed from step 9 (checkpoint {ck / 'step_00000009.pt'})\n" in out for _rc, out, _err in resumed)
    assert digest(resumed[0][1]) == digest(plain[0][1]) and sorted(p.name for p in ck.iterdir()) == ["step_00000009.pt"]


def test_every_kind_of_damage_is_refused():
    """decode_checkpoint on a good file's bytes edited each way (one interpreter with torch, no process group)."""
    program = r"""
import sys, torch
sys.path.insert(0, sys.argv[1])
import train_gloo as tg
model = torch.nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.5)
good = tg.encode_checkpoint(3, {"step": 3, "model": model.state_dict(), "optimizer": opt.state_dict()})
assert tg.decode_checkpoint(good, "p")[0] == 3
head, _, body = good.partition(b"\n")
cases = {
    "empty": b"",
    "no header": body,
    "cut short": good[:-1],
    "a byte changed": head + b"\n" + body[:10] + bytes([body[10] ^ 1]) + body[11:],
    "not torch": tg.CHECKPOINT_MAGIC.encode() + b" step=3 bytes=3 sha256=" + __import__("hashlib").sha256(b"abc").hexdigest().encode() + b"\nabc",
    "another step": tg.encode_checkpoint(4, {"step": 3, "model": {}, "optimizer": {}}),
    "no optimizer": tg.encode_checkpoint(3, {"step": 3, "model": {}}),
}
for why, data in cases.items():
    try:
        tg.decode_checkpoint(data, "/ck/step_00000003.pt")
    except tg.CheckpointError as exc:
        assert str(exc).startswith("checkpoint /ck/step_00000003.pt is damaged: "), (why, exc)
        assert str(exc).endswith("it is not resumed from; move it aside to resume from the one before it"), (why, exc)
        print(why, "refused")
    else:
        raise SystemExit(why + ": accepted")
"""
    proc = subprocess.run([str(TORCH_PYTHON), "-c", program, str(SCRIPT.parent)], capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count(" refused\n") == 7, proc.stdout
