# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The training command: one string split into an argument list like a POSIX shell splits words.

Used on the controller (action ``training_rank``, so a bad command fails before any runner
starts) and by the module itself. Runs on target hosts too: Python 3.8+, stdlib only.
"""

from __future__ import annotations

import os
import shlex

from ansible_collections.ascend.cluster.plugins.module_utils._job.env import aoe_conflicts
from ansible_collections.ascend.cluster.plugins.module_utils._job.progress import compile_progress

# Programs that do nothing useful without a script or arguments: as the whole command they mean
# the shell split `-e train_command="bash train.sh ..."` and Ansible kept only the first word.
LONE_INTERPRETERS = frozenset(("bash", "sh", "dash", "zsh", "python", "python3", "torchrun", "msrun"))


def check_argv(argv: list) -> list:
    """``argv`` if it is a runnable training command, else ValueError saying what to fix."""
    if not argv:
        raise ValueError("the training command is empty: set train_command")
    if len(argv) == 1 and os.path.basename(argv[0]) in LONE_INTERPRETERS:
        raise ValueError(
            "the training command is only %r, which would exit at once without training. If you wrote "
            "-e train_command=\"%s train.sh ...\", your shell removed the quotes and Ansible kept only the "
            "first word: write -e 'train_command=\"%s train.sh ...\"' (or put it in a vars file)" % (argv[0], argv[0], argv[0])
        )
    return argv


def split_command(command: str) -> list:
    """The argument list of ``command`` (never run by a shell), or ValueError saying what to fix."""
    try:
        argv = shlex.split(command)
    except ValueError as exc:
        raise ValueError("cannot split the training command %r: %s" % (command, exc)) from exc
    return check_argv(argv)


def controller_args(args: dict, command: str | None) -> dict:
    """What the controller checks of a rank's (or a server's ranks') module options before any runner starts: ``command``
    split into ``args["argv"]`` (never both), and an ``env`` that would silently replace the ``TUNE_BANK_PATH`` /
    ``AOE_MODE`` the launcher sets refused. ``args`` with ``argv`` set, or ValueError saying what to fix; the actions
    ``training_rank`` and ``training_ranks`` both ask it."""
    if command is not None:
        if args.get("argv"):
            raise ValueError("give either argv or command, not both")
        args["argv"] = split_command(str(command))
    try:
        conflicts = aoe_conflicts(args.get("env") or {}, args.get("tune_bank_path"), args.get("aoe_mode"))
    except (TypeError, ValueError) as exc:
        raise ValueError("aoe_mode: %s" % exc) from exc
    if conflicts:
        raise ValueError("; ".join(conflicts))
    return args


def resolve_launch(params: dict) -> None:
    """Check a launch module's ``params`` before anything starts: ``argv`` set from ``command``.

    Shared by ``training_rank`` and ``training_ranks``. Raises ValueError saying what to fix: a
    command that cannot be split or would not train, a ``TUNE_BANK_PATH`` / ``AOE_MODE`` in the
    job's environment that conflicts with the launcher's, or a ``progress_regex`` that is no regular expression.
    """
    if params.get("command") is not None:
        params["argv"] = split_command(params["command"])
    else:
        check_argv(params.get("argv") or [])
    conflicts = aoe_conflicts(params.get("env"), params.get("tune_bank_path"), params.get("aoe_mode"))
    if conflicts:
        raise ValueError("; ".join(conflicts))
    compile_progress(params.get("progress_regex"))
