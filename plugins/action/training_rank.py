# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action training_rank: split the training command on the controller, then run the module.

``command`` is split like a POSIX shell splits words (``_job.command.split_command``) here, so a command that cannot be split fails the task
on the controller at once (instead of in a detached async runner), and the module receives a
plain argument list it execs without a shell. An ``env`` that would silently replace the
``TUNE_BANK_PATH`` / ``AOE_MODE`` the launcher sets fails here too, before any runner starts.
Async (``async`` + ``poll: 0``) is passed through.
"""

from __future__ import annotations

from ansible_collections.ascend.cluster.plugins.module_utils._job.command import controller_args
from ansible_collections.ascend.cluster.plugins.plugin_utils._action import Action, Refusal


class ActionModule(Action):
    """Controller half of ``ascend.cluster.training_rank``."""

    _supports_async = True
    # the command is split here, into the module's argv
    OWN = ("command",)

    def act(self, args: dict, own: dict, task_vars: dict) -> dict:
        try:
            args = controller_args(args, own.get("command"))
        except ValueError as exc:
            raise Refusal(str(exc)) from exc
        return self.start_module(args, task_vars)
