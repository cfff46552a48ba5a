# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Per-node launchers (``torchrun``, ``msrun``): their argv, their environment, and what they report.

In a launcher mode each server runs ONE launcher process, which starts that server's ranks as its
own children (reference section 4: ``torchrun --nnodes --node_rank --nproc_per_node --master_addr
--master_port``; ``msrun --worker_num --local_worker_num --master_addr --master_port --node_rank
--log_dir --join``). Everything here is a pure function of the node's layout, so it is unit tested
table by table; ``_job.node_runner`` runs what it builds.

``node`` (one server's part of the job) holds: ``node_rank`` (the server's index in the rank layout,
rank 0's server is node 0), ``nnodes``, ``rank_size``, ``first_rank`` (the server's lowest rank id; its
ranks are ``first_rank .. first_rank + local_count - 1``), ``local_count``, ``devices`` (physical device
ids in local rank order), ``master_addr``, ``master_port``, ``log_dir``, ``rank_table_path``, ``host_ip``.

Runs on target hosts: Python 3.8+, stdlib only.
"""

from __future__ import annotations

import glob
import os
import re

from ansible_collections.ascend.cluster.plugins.module_utils._job.control import STOP_SIGNALS
from ansible_collections.ascend.cluster.plugins.module_utils._job.env import aoe_conflicts

PER_DEVICE = "per_device"
TORCHRUN = "torchrun"
MSRUN = "msrun"
LAUNCHERS = (PER_DEVICE, TORCHRUN, MSRUN)
# The variables a launcher gives each child its global rank in (the processes of a rank, found by them for py-spy).
RANK_VARIABLES = {TORCHRUN: ("RANK",), MSRUN: ("RANK_ID", "MS_NODE_ID")}
# What a per-rank exit code is taken from: the launcher's own failure report, or only its exit code.
REPORTS_RANKS = {TORCHRUN: True, MSRUN: False}

# torchrun's failure report (torch.distributed.elastic ChildFailedError), one block per failed worker:
#   rank      : 9 (local_rank: 1)
#   exitcode  : 1 (pid: 4242)
_TORCH_RANK = re.compile(r"^\s*rank\s*:\s*(\d+)\s*\(local_rank:\s*(\d+)\)")
_TORCH_EXIT = re.compile(r"^\s*exitcode\s*:\s*(-?\d+)")
_TORCH_ROOT = "Root Cause (first observed failure):"


def node_ranks(node: dict) -> list:
    """The global rank ids of the node's ranks, in local rank order."""
    return [int(node["first_rank"]) + index for index in range(int(node["local_count"]))]


def check_layout(launcher: str, ranks: list, node_rank: int) -> None:
    """ValueError unless the launcher numbers the server's ``ranks`` (``{rank_id, device_id}``, local rank order) as the table does.

    A launcher numbers its children ``node offset + local rank``: the rank table must give each server
    a contiguous block of rank ids in the order of its devices. msrun's offset is ``node_rank *
    local_worker_num`` (every server must have as many ranks); torchrun's is the ranks of the servers
    before it.
    """
    ids = [int(r["rank_id"]) for r in ranks]
    if not ids:
        raise ValueError("a launcher mode needs at least one rank on the server")
    if ids != list(range(ids[0], ids[0] + len(ids))):
        raise ValueError(
            "%s numbers this server's ranks %d..%d in device order, but the rank table gives them %s: "
            "use launcher=per_device for this layout" % (launcher, ids[0], ids[0] + len(ids) - 1, ", ".join(str(i) for i in ids))
        )
    if launcher == MSRUN and ids[0] != int(node_rank) * len(ids):
        raise ValueError(
            "msrun numbers node %d's %d workers from %d, but its first rank in the rank table is %d: with msrun every "
            "server must run the same number of ranks (set np to a multiple of the servers) or use launcher=per_device"
            % (int(node_rank), len(ids), int(node_rank) * len(ids), ids[0])
        )


def script_argv(launcher: str, argv: list) -> list:
    """The training command as the launcher's children run it, after the launcher's own options.

    torchrun runs a ``.py`` first word with its own Python; anything else (``python train.py``,
    ``bash train.sh``) is run as given with ``--no-python``, so the command is the same as in
    per-device mode. msrun gets the command as given (it runs a ``.py`` script with its Python).
    """
    argv = [str(a) for a in argv]
    if launcher == TORCHRUN and not argv[0].endswith(".py"):
        return ["--no-python"] + argv
    return argv


def launcher_argv(launcher: str, program: str, argv: list, node: dict, extra_args: list | None = None) -> list:
    """The launcher's full argv: ``program``, the node's options, ``extra_args``, then the training command."""
    extra = [str(a) for a in (extra_args or [])]
    if launcher == TORCHRUN:
        options = [
            "--nnodes=%d" % int(node["nnodes"]),
            "--node-rank=%d" % int(node["node_rank"]),
            "--nproc-per-node=%d" % int(node["local_count"]),
            "--master-addr=%s" % node["master_addr"],
            "--master-port=%d" % int(node["master_port"]),
            "--max-restarts=0",
            # every worker's stdout and stderr to <log_dir>/<run>/attempt_0/<local_rank>/; the console keeps
            # the launcher's own messages and its failure report
            "--log-dir=%s" % node["log_dir"],
            "--redirects=3",
        ]
    elif launcher == MSRUN:
        options = [
            "--worker_num=%d" % int(node["rank_size"]),
            "--local_worker_num=%d" % int(node["local_count"]),
            "--master_addr=%s" % node["master_addr"],
            "--master_port=%d" % int(node["master_port"]),
            "--node_rank=%d" % int(node["node_rank"]),
            "--log_dir=%s" % node["log_dir"],
            "--join=True",  # msrun waits for its workers (False returns at once, the job would look done)
        ]
    else:
        raise ValueError("unknown launcher %r; choose one of %s" % (launcher, ", ".join(LAUNCHERS)))
    return [str(program)] + options + extra + script_argv(launcher, argv)


def launcher_env(
    launcher: str,
    framework: str,
    node: dict,
    connect_timeout: int,
    extra: dict | None = None,
    tune_bank_path: str | None = None,
) -> dict:
    """The variables the launcher process gets (its children inherit them; the launcher adds their ids).

    No per-rank variable (``RANK``, ``LOCAL_RANK``, ``RANK_ID``, ``DEVICE_ID``): the launcher gives each
    child its own. ``ASCEND_RT_VISIBLE_DEVICES`` lists the server's devices in local rank order, so a
    child's logical device ``LOCAL_RANK`` is its rank's physical device. ``extra`` (the job's env) last.
    """
    if launcher not in (TORCHRUN, MSRUN):
        raise ValueError("unknown launcher %r; choose one of torchrun, msrun" % launcher)
    conflicts = aoe_conflicts(extra, tune_bank_path)
    if conflicts:
        raise ValueError("; ".join(conflicts))
    table = "MINDSPORE_HCCL_CONFIG_PATH" if framework == "mindspore_legacy" else "RANK_TABLE_FILE"
    env = {
        table: str(node["rank_table_path"]),
        "RANK_SIZE": str(int(node["rank_size"])),
        "DEVICE_NUM": str(int(node["local_count"])),
        "ASCEND_RT_VISIBLE_DEVICES": ",".join(str(int(d)) for d in node["devices"]),
        "HCCL_CONNECT_TIMEOUT": str(connect_timeout),
        "HCCL_WHITELIST_DISABLE": "1",
        "HCCL_IF_IP": str(node["host_ip"]),
    }
    if tune_bank_path:
        env["TUNE_BANK_PATH"] = str(tune_bank_path)
    for name, value in (extra or {}).items():
        env[str(name)] = str(value)
    return env


def worker_logs(launcher: str, log_dir: str, local_rank: int, rank_id: int) -> list:
    """The files the launcher writes one child's output to (those that exist now), in the order to copy them.

    torchrun: ``<log_dir>/<run id>_<random>/attempt_<n>/<local_rank>/stdout.log`` and ``stderr.log``
    (the newest attempt); msrun: ``<log_dir>/worker_<rank>.log``.
    """
    if launcher == TORCHRUN:
        attempts = sorted(glob.glob(os.path.join(glob.escape(log_dir), "*", "attempt_*")), key=os.path.getmtime)
        if not attempts:
            return []
        base = os.path.join(attempts[-1], str(int(local_rank)))
        return [p for p in (os.path.join(base, "stdout.log"), os.path.join(base, "stderr.log")) if os.path.isfile(p)]
    path = os.path.join(log_dir, "worker_%d.log" % int(rank_id))
    return [path] if os.path.isfile(path) else []


def parse_torchrun_failures(text: str) -> tuple:
    """``(failures, root)`` from torchrun's console: ``{rank: exitcode}`` of every worker its report names,
    and the rank it calls the root cause (first observed failure), None when it names none."""
    failures: dict = {}
    root = None
    in_root = False
    rank = None
    for line in text.splitlines():
        if line.strip() == _TORCH_ROOT:
            in_root = True
            continue
        found = _TORCH_RANK.match(line)
        if found:
            rank = int(found.group(1))
            continue
        code = _TORCH_EXIT.match(line)
        if code and rank is not None:
            failures[rank] = int(code.group(1))
            if in_root and root is None:
                root = rank
            rank = None
    return failures, root


def rank_outcomes(
    launcher: str,
    launcher_rc: int,
    ranks: list,
    console: str,
    stopped_by: str | None,
    stalled_rank: int | None = None,
    stalled_why: str | None = None,
) -> list:
    """How each of the node's ``ranks`` ended, from the launcher's exit code and what it reported.

    One dict per rank: ``rank_id``, ``rc``, ``rc_from`` (``report``: the launcher's failure report gave
    the rank's own exit code; ``launcher``: the launcher's exit code stands for the rank's), ``stopped``
    (the rank ended because the job was stopped - by us, ``stopped_by`` set, or by the launcher after
    another of its ranks failed - not by a fault of its own), ``error`` and ``blame`` (the rank to name as
    the node's failure; one at most, none when we stopped the job).

    - exit 0: every child exited 0 (both launchers exit 0 only then);
    - torchrun's report names ranks: they get their exit codes and the root cause is blamed; a named rank
      killed by SIGTERM / SIGKILL after the root cause, and the ranks not named, were stopped by torchrun
      (or by us);
    - msrun, or a torchrun that names no rank (it was stopped, or died): no per-rank exit code is
      observable - every rank gets the launcher's exit code; unless we stopped the job, all of them
      failed and the node's first rank is blamed.
    - ``stalled_rank``: the runner stopped the launcher because that rank stalled (``stalled_why``): it failed,
      and is blamed unless the job was being stopped anyway; the others were stopped.
    """
    ranks = [int(r) for r in ranks]
    outcomes = [{"rank_id": r, "rc": launcher_rc, "rc_from": "launcher", "stopped": False, "error": None, "blame": False} for r in ranks]
    if stalled_rank is not None:
        for outcome in outcomes:
            if outcome["rank_id"] == int(stalled_rank):
                outcome.update(blame=stopped_by is None, error=stalled_why)
            else:
                outcome.update(stopped=True, error="stopped after rank %d stalled" % int(stalled_rank))
        return outcomes
    if launcher_rc == 0:
        return outcomes
    failures, root = parse_torchrun_failures(console) if REPORTS_RANKS.get(launcher) else ({}, None)
    named = [r for r in ranks if r in failures]
    first = None if stopped_by is not None else root if root in named else (named or ranks)[0]
    for outcome in outcomes:
        rank = outcome["rank_id"]
        outcome["blame"] = rank == first
        if rank in failures:
            outcome.update(rc=failures[rank], rc_from="report")
            if stopped_by is None and rank != first and failures[rank] in STOP_SIGNALS:  # torchrun's own TERM after the root cause
                outcome.update(stopped=True, error="stopped by %s after rank %s failed" % (launcher, first))
        elif stopped_by is not None:
            outcome["stopped"] = True
        elif named:
            outcome.update(stopped=True, error="stopped by %s after rank %s failed" % (launcher, first))
        else:
            outcome["error"] = "%s exited %s without naming the failed rank; each rank's own exit code is not observable" % (
                launcher,
                launcher_rc,
            )
    return outcomes
