"""Stand-in for a data-parallel NPU training: a small PyTorch CPU model, torch.distributed over gloo.

gloo plays HCCL's part so the launcher can be tested end to end without NPUs. Run it through the
launcher with the ``pytorch`` framework preset (MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK,
LOCAL_RANK come from there; HCCL_CONNECT_TIMEOUT bounds the rendezvous like HCCL's).

Every rank fits y = X @ w_true + b_true on its own batches of a synthetic data set (SGD with
momentum); DDP averages the gradients, so the loss falls and every rank ends with the same weights.
Each rank prints ``step N loss L`` and finally ``final weights sha256 <digest>`` and writes
``final_weights.json`` in its working directory.

    python train_gloo.py [--steps 30] [--lr 0.1] [--checkpoint-dir DIR [--checkpoint-every 5]]
                         [--fail-rank R --fail-step S [--fail-once-file F]]

Checkpoints (``--checkpoint-dir DIR``): rank 0 writes ``DIR/step_<N>.pt`` after every
``--checkpoint-every`` K steps (0: never; the two newest are kept): the model's and the optimizer's
state and the step, written to a temporary file of mode 0644 beside it and renamed into place, so a
file under its final name is always complete. At start rank 0 alone reads the newest one, checks
it and sends its bytes to every rank over the process group: ranks on other servers need not see
DIR (on a real cluster DIR is shared storage; on a test bed or a single server it may be a local
directory of rank 0's server - then a restart whose rank 0 is on another server starts afresh).
Every rank then prints ``resumed from step N (checkpoint PATH)`` and continues with step N+1, or
``no checkpoint in DIR: starting at step 0``. A checkpoint that fails its check (a bad header,
length or sha256, or a state torch cannot load) is refused: the job exits 1 naming the file, and
is never resumed from silently (a file under its final name was renamed into place complete, so
damage means the storage or a person changed it; move it aside to resume from the one before it).
Leftover temporary files of a writer that died are ignored.

What a resumed run reproduces: each step's batch is a function of (rank, step) only, and the
checkpoint holds the exact weights and momentum buffers, so a run resumed from step N with the
same world size ends with the same final weights as an uninterrupted run, wherever its ranks run
(a spare server in place of a lost one included) - bit for bit on the same torch build, whose gloo
all-reduce of a given world size sums in a fixed order (the digest is of the weights rounded to 6
decimals, so it matches too). With another world size (a job shrunk to fewer ranks) the ranks'
batches differ, so the weights differ too; the run says so in a ``note:`` line and still converges.

``ASCEND_RESTART_COUNT`` (set by the launch on every attempt, 0 on the first) or else
``TORCHELASTIC_RESTART_COUNT`` (torchrun's): printed as ``restart count N`` when set.

Fault injection for tests: ``--fail-rank R --fail-step S`` makes rank R exit 1 at step S (a ``RuntimeError`` written to
``TORCHELASTIC_ERROR_FILE`` by torch's error handler first, as ``@record`` writes one); with
``--fail-once-file F`` only while F does not exist yet (the failing rank creates it), so the next
attempt runs through.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import io
import json
import os
import re
import sys
import time
import warnings

warnings.filterwarnings("ignore", message="Failed to initialize NumPy")  # numpy is not needed here

# hccl_standin: the HCCL stand-in beside this file (standard library only); its checkpoint file helpers and
# restart count are this script's too.
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from hccl_standin import fail_once, newest_checkpoint, prune_checkpoints, restart_count, write_atomically  # noqa: E402
from torch.nn.parallel import DistributedDataParallel  # noqa: E402

FEATURES = 8
CHECKPOINT_NAME = re.compile(r"^step_(\d+)\.pt$")
CHECKPOINT_MAGIC = "train_gloo checkpoint 1"


class CheckpointError(Exception):
    """A checkpoint that must not be resumed from; the message names the file and what to do."""


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--momentum", type=float, default=0.5, help="SGD momentum (its buffers are part of the checkpoint)")
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--checkpoint-dir", default="", help="rank 0 writes checkpoints here and every rank resumes from the newest")
    parser.add_argument("--checkpoint-every", type=int, default=5, help="steps between checkpoints (0: never write one)")
    parser.add_argument("--fail-rank", type=int, default=-1, help="this rank exits 1 at --fail-step (fail-fast tests)")
    parser.add_argument("--fail-step", type=int, default=5)
    parser.add_argument("--fail-once-file", default="", help="fail only while this file does not exist, creating it")
    parser.add_argument("--data_path", default="", help="accepted for train_1p.sh compatibility; unused")
    args = parser.parse_args(argv)
    if args.checkpoint_every < 0:
        parser.error("--checkpoint-every must be 0 (never) or a number of steps")
    return args


def batch(rank: int, step: int, size: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Rank ``rank``'s batch of step ``step``: the same true model everywhere, samples from (rank, step) alone."""
    truth = torch.Generator().manual_seed(1234)
    w_true = torch.randn(FEATURES, 1, generator=truth)
    data = torch.Generator().manual_seed(1_000_003 * (rank + 1) + step)
    x = torch.randn(size, FEATURES, generator=data)
    return x, x @ w_true + 0.5 + 0.01 * torch.randn(size, 1, generator=data)


# --------------------------------------------------------------------------- checkpoints (rank 0 reads and writes)


def checkpoint_path(directory: str, step: int) -> str:
    return os.path.join(directory, f"step_{step:08d}.pt")


def encode_checkpoint(step: int, state: dict) -> bytes:
    """The file's bytes: one header line (magic, step, payload length and sha256), then torch.save's bytes."""
    buffer = io.BytesIO()
    torch.save(state, buffer)
    payload = buffer.getvalue()
    header = f"{CHECKPOINT_MAGIC} step={step} bytes={len(payload)} sha256={hashlib.sha256(payload).hexdigest()}\n"
    return header.encode() + payload


def decode_checkpoint(data: bytes, path: str) -> tuple[int, dict]:
    """``(step, state)`` from a checkpoint's bytes; CheckpointError naming ``path`` when any check fails."""
    refuse = f"checkpoint {path} is damaged: %s - it is not resumed from; move it aside to resume from the one before it"
    header, sep, payload = data.partition(b"\n")
    match = re.fullmatch(rf"{CHECKPOINT_MAGIC} step=(\d+) bytes=(\d+) sha256=([0-9a-f]{{64}})", header.decode("latin-1"))
    if not sep or not match:
        raise CheckpointError(refuse % f"its first line is not a '{CHECKPOINT_MAGIC} ...' header")
    step, length, digest = int(match.group(1)), int(match.group(2)), match.group(3)
    if len(payload) != length:
        raise CheckpointError(refuse % f"{len(payload)} bytes of state where its header says {length} (cut short?)")
    if hashlib.sha256(payload).hexdigest() != digest:
        raise CheckpointError(refuse % "its state does not match the sha256 in its header")
    try:
        state = torch.load(io.BytesIO(payload), weights_only=True)
    except Exception as exc:  # pylint: disable=broad-except  # torch raises many kinds here: each means the state is unusable
        raise CheckpointError(refuse % f"torch cannot load its state ({exc})") from None
    if not isinstance(state, dict) or state.get("step") != step or not {"model", "optimizer"} <= set(state):
        raise CheckpointError(refuse % "its state lacks the step, model or optimizer")
    return step, state


def write_checkpoint(directory: str, step: int, state: dict) -> str:
    """Write step ``step``'s checkpoint atomically (mode 0644), keep the newest two; its path."""
    path = checkpoint_path(directory, step)
    write_atomically(path, encode_checkpoint(step, state), 0o644)
    prune_checkpoints(directory, CHECKPOINT_NAME)
    return path


def read_newest(directory: str) -> tuple[str, bytes] | None:
    """``(path, bytes)`` of the newest checkpoint in ``directory``, checked; None when there is none."""
    found = newest_checkpoint(directory, CHECKPOINT_NAME)
    if found:
        decode_checkpoint(found[1], found[0])
    return found


def broadcast_bytes(data: bytes, rank: int) -> bytes:
    """Rank 0's ``data`` on every rank, over the process group (two broadcasts: the length, then the bytes).

    Plain tensors rather than broadcast_object_list, which needs numpy on this torch; ``frombuffer``
    lets gloo write straight into the bytearray.
    """
    length = torch.tensor([len(data) if rank == 0 else 0], dtype=torch.int64)
    dist.broadcast(length, src=0)
    buffer = bytearray(data) if rank == 0 else bytearray(int(length.item()))
    if buffer:
        dist.broadcast(torch.frombuffer(buffer, dtype=torch.uint8), src=0)
    return bytes(buffer)


def agree_on_checkpoint(directory: str, rank: int) -> tuple[str, int, dict] | None:
    """Rank 0 reads the newest checkpoint and sends it to every rank: ``(path, step, state)``, or None to start afresh.

    Every rank returns the same answer; a checkpoint rank 0 refuses raises CheckpointError on every rank.
    The message is one JSON line (``{"kind": "ok" | "none" | "refused", "path" | "error": ...}``), then
    the checkpoint's bytes, which every rank checks again after the transfer.
    """
    message = b""
    if rank == 0:
        try:
            found = read_newest(directory)
            head, data = ({"kind": "ok", "path": found[0]}, found[1]) if found else ({"kind": "none"}, b"")
        except CheckpointError as exc:
            head, data = {"kind": "refused", "error": str(exc)}, b""
        except OSError as exc:
            head, data = {"kind": "refused", "error": f"cannot read the checkpoints in {directory}: {exc}"}, b""
        message = json.dumps(head).encode() + b"\n" + data
    line, _sep, data = broadcast_bytes(message, rank).partition(b"\n")
    head = json.loads(line)
    if head["kind"] == "refused":
        raise CheckpointError(head["error"] if rank == 0 else f"rank 0 refused its checkpoint: {head['error']}")
    if head["kind"] == "none":
        return None
    step, state = decode_checkpoint(data, head["path"])
    return head["path"], step, state


def record_failure(exc: Exception) -> None:
    """What torch's ``@record`` does with an exception that leaves the script: its error handler writes it, with this
    traceback, to ``TORCHELASTIC_ERROR_FILE`` (set by torchrun, and by the launch's pytorch preset) - here before the
    ``os._exit`` that a crash under a live gloo group needs, which no decorator would see."""
    from torch.distributed.elastic.multiprocessing.errors import get_error_handler

    try:
        raise exc
    except Exception as raised:  # recorded, then the caller exits (os._exit)
        get_error_handler().record_exception(raised)


def fail_now(args: argparse.Namespace, rank: int, step: int) -> bool:
    """The injected fault: rank --fail-rank at --fail-step, once only with --fail-once-file."""
    if rank != args.fail_rank or step < args.fail_step:
        return False
    return not args.fail_once_file or fail_once(args.fail_once_file)


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    torch.set_num_threads(1)
    timeout = datetime.timedelta(seconds=int(os.environ.get("HCCL_CONNECT_TIMEOUT", "120")))
    started = time.time()
    dist.init_process_group("gloo", init_method="env://", timeout=timeout)
    rank, world = dist.get_rank(), dist.get_world_size()
    print(f"rank {rank}/{world} joined in {time.time() - started:.2f}s", flush=True)
    count = restart_count(dict(os.environ))
    if count is not None:
        print(f"restart count {count}", flush=True)
    torch.manual_seed(0)  # the same initial weights on every rank (DDP also broadcasts rank 0's)
    model = DistributedDataParallel(torch.nn.Linear(FEATURES, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum)
    done = 0
    if args.checkpoint_dir:
        try:
            resumed = agree_on_checkpoint(args.checkpoint_dir, rank)
        except CheckpointError as exc:
            print(f"train_gloo: {exc}", file=sys.stderr, flush=True)
            sys.stdout.flush()
            # exit 1 at once: tearing the gloo group down while the other rank leaves too sometimes aborts (rc -6,
            # "terminate called without an active exception") instead
            os._exit(1)
        if resumed:
            path, done, state = resumed
            model.module.load_state_dict(state["model"])
            optimizer.load_state_dict(state["optimizer"])
            print(f"resumed from step {done} (checkpoint {path})", flush=True)
            if state.get("world_size") != world:
                print(
                    f"note: the checkpoint was written by {state.get('world_size')} ranks, this run has {world}: the ranks' "
                    "batches differ from those of an uninterrupted run",
                    flush=True,
                )
        else:
            print(f"no checkpoint in {args.checkpoint_dir}: starting at step 0", flush=True)
    for step in range(done + 1, args.steps + 1):
        if fail_now(args, rank, step):
            print(f"rank {rank} failing on purpose at step {step}", flush=True)
            record_failure(RuntimeError(f"rank {rank} failing on purpose at step {step}"))
            os._exit(1)  # at once, as a crash would: a normal exit under a live gloo group may abort (rc 134) instead
        x, y = batch(rank, step, args.batch)
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        print(f"step {step} loss {loss.item():.6f}", flush=True)
        if rank == 0 and args.checkpoint_dir and args.checkpoint_every and step % args.checkpoint_every == 0:
            state = {"step": step, "world_size": world, "model": model.module.state_dict(), "optimizer": optimizer.state_dict()}
            try:
                print(f"checkpoint step {step} written to {write_checkpoint(args.checkpoint_dir, step, state)}", flush=True)
            except OSError as exc:
                print(
                    f"train_gloo: cannot write a checkpoint in {args.checkpoint_dir} ({exc}): make it writable", file=sys.stderr, flush=True
                )
                os._exit(1)  # the other ranks are mid-step: leave at once, as fail-fast expects
    weights = [round(v, 6) for p in model.module.parameters() for v in p.detach().flatten().tolist()]
    digest = hashlib.sha256(json.dumps(weights).encode()).hexdigest()
    with open("final_weights.json", "w", encoding="utf-8") as handle:
        json.dump({"rank": rank, "weights": weights, "sha256": digest}, handle)
    print(f"final weights sha256 {digest}", flush=True)
    dist.barrier()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    code = main(sys.argv[1:])
    sys.stdout.flush()
    sys.stderr.flush()
    # Leave without the interpreter's teardown: with torch 2.x's gloo, destructors racing the peer's exit sometimes abort
    # a finished rank ("terminate called without an active exception", rc -6) after its last line - a failure the
    # training did not have. Everything it writes is closed by now.
    os._exit(code)
