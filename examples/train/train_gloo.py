"""Stand-in for a data-parallel NPU training: a small PyTorch CPU model, torch.distributed over gloo.

gloo plays HCCL's part so the launcher can be tested end to end without NPUs. Run it through the
launcher with the ``pytorch`` framework preset (MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK,
LOCAL_RANK come from there; HCCL_CONNECT_TIMEOUT bounds the rendezvous like HCCL's).

Every rank fits y = X @ w_true + b_true on its own shard of a synthetic data set; DDP averages
the gradients, so the loss falls and every rank ends with the same weights. Each rank prints
``step N loss L`` and finally ``final weights sha256 <digest>`` and writes ``final_weights.json``
in its working directory.

    python train_gloo.py [--steps 30] [--lr 0.1] [--fail-rank R --fail-step S]
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import os
import sys
import time
import warnings

warnings.filterwarnings("ignore", message="Failed to initialize NumPy")  # numpy is not needed here

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from torch.nn.parallel import DistributedDataParallel  # noqa: E402

FEATURES = 8


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--fail-rank", type=int, default=-1, help="this rank exits 1 at --fail-step (fail-fast tests)")
    parser.add_argument("--fail-step", type=int, default=5)
    parser.add_argument("--data_path", default="", help="accepted for train_1p.sh compatibility; unused")
    return parser.parse_args(argv)


def shard(rank: int, batch: int) -> tuple[torch.Tensor, torch.Tensor]:
    """This rank's data: the same true model everywhere, different samples per rank."""
    truth = torch.Generator().manual_seed(1234)
    w_true = torch.randn(FEATURES, 1, generator=truth)
    data = torch.Generator().manual_seed(1000 + rank)
    x = torch.randn(batch, FEATURES, generator=data)
    return x, x @ w_true + 0.5 + 0.01 * torch.randn(batch, 1, generator=data)


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    torch.set_num_threads(1)
    timeout = datetime.timedelta(seconds=int(os.environ.get("HCCL_CONNECT_TIMEOUT", "120")))
    started = time.time()
    dist.init_process_group("gloo", init_method="env://", timeout=timeout)
    rank, world = dist.get_rank(), dist.get_world_size()
    print(f"rank {rank}/{world} joined in {time.time() - started:.2f}s", flush=True)
    torch.manual_seed(0)  # the same initial weights on every rank (DDP also broadcasts rank 0's)
    model = DistributedDataParallel(torch.nn.Linear(FEATURES, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr)
    x, y = shard(rank, args.batch)
    for step in range(1, args.steps + 1):
        if rank == args.fail_rank and step >= args.fail_step:
            print(f"rank {rank} failing on purpose at step {step}", flush=True)
            return 1
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        print(f"step {step} loss {loss.item():.6f}", flush=True)
    weights = [round(v, 6) for p in model.module.parameters() for v in p.detach().flatten().tolist()]
    digest = hashlib.sha256(json.dumps(weights).encode()).hexdigest()
    with open("final_weights.json", "w", encoding="utf-8") as handle:
        json.dump({"rank": rank, "weights": weights, "sha256": digest}, handle)
    print(f"final weights sha256 {digest}", flush=True)
    dist.barrier()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
