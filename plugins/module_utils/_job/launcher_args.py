# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""``ascend_launch_launcher_args`` checked against what the launch relies on: a per-node launcher's options that the
collection sets itself, or that would move or rename what it reads, are refused before anything starts.

The launcher's argv is ``<launcher> <the collection's options> <launcher_args> <training command>``
(``_job.launcher.launcher_argv``). Both launchers parse it with Python's argparse, where an option given twice takes its
last value and an unambiguous prefix of an option's name is that option: an extra ``--master-port`` (or ``--master-p``)
would silently replace the collection's. What is refused, and why:

- torchrun (``torch/distributed/run.py``; each option in both spellings, ``--nproc-per-node`` / ``--nproc_per_node``):
  ``--nnodes``, ``--node-rank``, ``--nproc-per-node``, ``--master-addr``, ``--master-port`` (the job's layout and its
  rendezvous: the rank table numbers the ranks by them); ``--max-restarts`` (the collection's restarts are
  ``-e max_restarts``, whole-job attempts with their own ids: torchrun's own would restart behind the job's group);
  ``--log-dir``, ``-r`` / ``--redirects``, ``--logs-specs`` (each rank's output is copied from
  ``<log_dir>/<run>/attempt_<n>/<local_rank>/stdout.log`` and ``stderr.log`` into its ``train.log``); ``--rdzv-backend``,
  ``--rdzv-endpoint``, ``--standalone`` (another rendezvous assigns node ranks itself, and the rank table's numbering
  no longer holds); ``-m`` / ``--module``, ``--no-python`` (how the training command is run is decided from its first
  word: give ``python -m pkg ...`` as the command instead); ``--virtual-local-rank`` (every worker would get
  ``LOCAL_RANK=0``, and so the first device of ``ASCEND_RT_VISIBLE_DEVICES``);
- msrun (MindSpore's *msrun Launching* tutorial, its parameter table): ``--worker_num``, ``--local_worker_num``,
  ``--master_addr``, ``--master_port``, ``--node_rank`` (the job's layout), ``--log_dir``, ``--worker_log_name`` (each rank's
  output is copied from ``<log_dir>/worker_<rank>.log``, msrun's default name; a renamed log would leave every rank's
  ``train.log`` empty and the diagnosis blind), ``--join`` (the collection waits on msrun, which must wait for its
  workers).

Everything else passes as given (``--tee``, ``--local-ranks-filter``, ``--rdzv-id``, ``--monitor-interval``,
``--start-method``; msrun's ``--cluster_time_out``, ``--bind_core``, ``--tail_worker_log``, ...).

Runs on target hosts: Python 3.8+, stdlib only.
"""

from __future__ import annotations

from ansible_collections.ascend.cluster.plugins.module_utils._job.launcher import MSRUN, TORCHRUN

_LAYOUT = "the collection sets it from the job's layout (the rank table numbers the ranks by it)"
_LOGS_TORCH = "each rank's output is copied from torchrun's <log_dir>/<run>/attempt_<n>/<local_rank>/ into its train.log"
_LOGS_MS = (
    "each rank's output is copied from msrun's <log_dir>/worker_<rank>.log into its train.log: a renamed or moved log"
    " leaves every rank's train.log empty and the diagnosis without its lines"
)
_RDZV = "another rendezvous assigns node ranks itself, and the rank table's numbering would not hold"
_RUN = "the collection decides how the command runs from its first word: give `python -m <module> ...` as the command instead"

# option (long names without the leading dashes, '-' for '_') -> why it is refused
REFUSED = {
    TORCHRUN: {
        "nnodes": _LAYOUT,
        "node-rank": _LAYOUT,
        "nproc-per-node": _LAYOUT,
        "master-addr": _LAYOUT,
        "master-port": _LAYOUT,
        "max-restarts": "restarts are the job's own (whole-job attempts with their own ids, ascend_launch_max_restarts), torchrun's would restart behind them",
        "log-dir": _LOGS_TORCH,
        "redirects": _LOGS_TORCH,
        "logs-specs": _LOGS_TORCH,
        "rdzv-backend": _RDZV,
        "rdzv-endpoint": _RDZV,
        "standalone": _RDZV,
        "module": _RUN,
        "no-python": _RUN,
        "virtual-local-rank": "every worker would get LOCAL_RANK=0, and so the first device of ASCEND_RT_VISIBLE_DEVICES",
    },
    MSRUN: {
        "worker-num": _LAYOUT,
        "local-worker-num": _LAYOUT,
        "master-addr": _LAYOUT,
        "master-port": _LAYOUT,
        "node-rank": _LAYOUT,
        "log-dir": _LOGS_MS,
        "worker-log-name": _LOGS_MS,
        "join": "the collection waits on msrun, which must wait for its workers (--join=True)",
    },
}
# single-dash short options -> their long name
SHORT = {TORCHRUN: {"r": "redirects", "m": "module"}, MSRUN: {}}
# the shortest prefix argparse would read as an option: two letters after the dashes
_MIN_PREFIX = 2


def _name(arg: str, launcher: str) -> str | None:
    """The long option ``arg`` stands for, normalised (``--nproc_per_node=8`` -> ``nproc-per-node``), or None."""
    if arg.startswith("--"):
        return arg[2:].split("=", 1)[0].replace("_", "-").lower()
    if arg.startswith("-") and len(arg) >= 2 and arg[1] != "-":
        return SHORT.get(launcher, {}).get(arg[1])
    return None


def refusals(launcher: str, args: list | None) -> list:
    """One message per option of ``args`` that ``launcher`` must not get (an empty list: all pass).

    An option is refused under its own name and under any prefix of it argparse would expand (``--master-p``); a
    value after ``--`` is the training command's, not the launcher's.
    """
    refused = REFUSED.get(launcher)
    if not refused:
        return []
    problems = []
    for arg in [str(a) for a in (args or [])]:
        if arg == "--":
            break
        name = _name(arg, launcher)
        if not name:
            continue
        hits = [option for option in refused if option == name or (len(name) >= _MIN_PREFIX and option.startswith(name))]
        for option in hits[:1]:
            spelled = ("--" + option) if launcher == TORCHRUN else ("--" + option.replace("-", "_"))
            shown = arg.split("=", 1)[0]
            same = "" if shown == spelled else " (%s)" % spelled
            problems.append("ascend_launch_launcher_args: %s %s%s is refused: %s" % (launcher, shown, same, refused[option]))
    return problems
