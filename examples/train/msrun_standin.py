"""Stand-in for MindSpore's ``msrun`` launcher, for testing the collection's launcher=msrun mode without MindSpore.

It takes msrun's documented options (MindSpore tutorial "msrun Launching"; reference section 4):
``--worker_num --local_worker_num --master_addr --master_port (8118) --node_rank (-1) --log_dir (.)
--join (False) --cluster_time_out (600)``, then the task script and its arguments, and does what the
documentation says msrun does on one node:

- starts ``--local_worker_num`` workers of the task script (a ``.py`` script with this Python, anything
  else as given), with rank ids ``node_rank * local_worker_num + i`` (with ``--node_rank`` unset, a
  single node only: ``0..local_worker_num-1``);
- writes each worker's stdout and stderr to ``<log_dir>/worker_<rank>.log`` (and, on the node that hosts
  the scheduler, node 0, a ``scheduler.log``), making ``log_dir`` if needed;
- ``--join False`` returns as soon as the workers are started; ``--join True`` waits for them.

What the documentation does not say, and this stand-in assumes (docs/launch.md, "msrun"): each worker
gets the dynamic cluster variables ``MS_ROLE=MS_WORKER``, ``MS_WORKER_NUM``, ``MS_SCHED_HOST``,
``MS_SCHED_PORT``, ``MS_NODE_ID`` (its rank), plus ``RANK_ID`` (its rank), ``RANK_SIZE`` and ``DEVICE_ID``
(its index among the node's devices); when one worker exits non-zero the others are sent SIGTERM and
the launcher exits 1; a SIGTERM to the launcher is passed to every worker, and it exits 1. There is no
scheduler process and no networking: ``--master_addr``/``--master_port``/``--cluster_time_out`` are only
checked and logged.

    msrun_standin.py --worker_num=16 --local_worker_num=8 --node_rank=1 --master_addr=10.0.0.1 \\
        --log_dir=logs --join=True train.py --epochs 3
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time

POLL_S = 0.1


def to_bool(text: str) -> bool:
    if text.lower() in ("true", "1", "yes"):
        return True
    if text.lower() in ("false", "0", "no"):
        return False
    raise argparse.ArgumentTypeError(f"expected True or False, got {text!r}")


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="msrun", description=__doc__.splitlines()[0])
    parser.add_argument("--worker_num", type=int, default=8)
    parser.add_argument("--local_worker_num", type=int, default=8)
    parser.add_argument("--master_addr", default="127.0.0.1")
    parser.add_argument("--master_port", type=int, default=8118)
    parser.add_argument("--node_rank", type=int, default=-1)
    parser.add_argument("--log_dir", default=".")
    parser.add_argument("--join", type=to_bool, default=False)
    parser.add_argument("--cluster_time_out", type=int, default=600)
    parser.add_argument("task_script")
    parser.add_argument("task_script_args", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    if not 0 < args.local_worker_num <= args.worker_num:
        parser.error("--local_worker_num must be between 1 and --worker_num")
    if not 1024 <= args.master_port <= 65535:
        parser.error("--master_port must be a port between 1024 and 65535")
    if args.node_rank < 0 and args.local_worker_num != args.worker_num:
        parser.error("this stand-in needs --node_rank when the workers span several nodes")
    return args


def worker_ranks(args: argparse.Namespace) -> list[int]:
    first = 0 if args.node_rank < 0 else args.node_rank * args.local_worker_num
    ranks = list(range(first, first + args.local_worker_num))
    if ranks[-1] >= args.worker_num:
        raise SystemExit(f"msrun: node {args.node_rank} with {args.local_worker_num} workers exceeds --worker_num {args.worker_num}")
    return ranks


def worker_env(args: argparse.Namespace, rank: int, index: int) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        MS_ROLE="MS_WORKER",
        MS_WORKER_NUM=str(args.worker_num),
        MS_SCHED_HOST=args.master_addr,
        MS_SCHED_PORT=str(args.master_port),
        MS_NODE_ID=str(rank),
        RANK_ID=str(rank),
        RANK_SIZE=str(args.worker_num),
        DEVICE_ID=str(index),
    )
    return env


def task_argv(args: argparse.Namespace) -> list[str]:
    if args.task_script.endswith(".py"):
        return [sys.executable, args.task_script, *args.task_script_args]
    return [args.task_script, *args.task_script_args]


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    ranks = worker_ranks(args)
    os.makedirs(args.log_dir, exist_ok=True)
    if args.node_rank <= 0:
        with open(os.path.join(args.log_dir, "scheduler.log"), "w", encoding="utf-8") as handle:
            handle.write(f"stand-in scheduler for {args.worker_num} workers at {args.master_addr}:{args.master_port} (no process)\n")
    workers: dict[int, subprocess.Popen] = {}
    stopping: list[int] = []

    def stop(signum: int, _frame: object) -> None:
        stopping.append(signum)
        for proc in workers.values():
            if proc.poll() is None:
                proc.terminate()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGHUP, stop)
    for index, rank in enumerate(ranks):
        with open(os.path.join(args.log_dir, f"worker_{rank}.log"), "wb") as log:
            workers[rank] = subprocess.Popen(
                task_argv(args), env=worker_env(args, rank, index), stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT
            )
    print(f"msrun stand-in: started workers {ranks[0]}..{ranks[-1]} of {args.worker_num}, logs in {args.log_dir}", flush=True)
    if not args.join:
        return 0
    failed = None
    while any(proc.poll() is None for proc in workers.values()):
        for rank, proc in workers.items():
            if failed is None and proc.poll() not in (None, 0) and not stopping:
                failed = rank
                print(f"msrun stand-in: worker {rank} exited with {proc.returncode}; stopping the others", flush=True)
                stop(signal.SIGTERM, None)
        time.sleep(POLL_S)
    codes = {rank: proc.returncode for rank, proc in workers.items()}
    if stopping or any(codes.values()):
        print(f"msrun stand-in: workers ended with {codes}", flush=True)
        return 1
    print("msrun stand-in: every worker exited 0", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
