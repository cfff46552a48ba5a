# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action training_rank: split the training command on the controller, then run the module.

``command`` is split like a POSIX shell splits words (``_job_command.split_command``) here, so a command that cannot be split fails the task
on the controller at once (instead of in a detached async runner), and the module receives a
plain argument list it execs without a shell. An ``env`` that would silently replace the
``TUNE_BANK_PATH`` / ``AOE_MODE`` the launcher sets fails here too, before any runner starts.
Async (``async`` + ``poll: 0``) is passed through.
"""

from __future__ import annotations

from ansible_collections.ascend.cluster.plugins.module_utils._job_command import split_command
from ansible_collections.ascend.cluster.plugins.module_utils._job_env import aoe_conflicts
from ansible_collections.ascend.cluster.plugins.plugin_utils._action import Action, Refusal


class ActionModule(Action):
    """Controller half of ``ascend.cluster.training_rank``."""

    _supports_async = True

    # the command is split here, into the module's argv
    OWN = ("command",)

    def act(self, args: dict, own: dict, task_vars: dict) -> dict:
        command = own.get("command")
        if command is not None:
            if args.get("argv"):
                raise Refusal("give either argv or command, not both")
            try:
                args["argv"] = split_command(str(command))
            except ValueError as exc:
                raise Refusal(str(exc)) from exc
        try:
            conflicts = aoe_conflicts(args.get("env") or {}, args.get("tune_bank_path"), args.get("aoe_mode"))
        except (TypeError, ValueError) as exc:
            raise Refusal(f"aoe_mode: {exc}") from exc
        if conflicts:
            raise Refusal("; ".join(conflicts))
        wrap_async = bool(self._task.async_val) and not self._connection.has_native_async
        result = self._module_call(args, task_vars, wrap_async)
        if not wrap_async:
            self._remove_tmp_path(self._connection._shell.tmpdir)
        return result

    def _module_call(self, args: dict, task_vars: dict, wrap_async: bool) -> dict:
        """The task's module with ``args`` (the training_ranks action sends its detached calls elsewhere)."""
        return self._execute_module(module_args=args, task_vars=task_vars, wrap_async=wrap_async)
