# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action training_job: run the module; an interrupted staging wait or gate releases the job's runners.

A Ctrl-C (or SIGTERM) to ansible-playbook while ``state=staged`` waits for the ranks to stage, or
while ``state=gate`` opens the gate, stops the job on the server at once (``state=stop``: the abort
file makes the runners at the gate give up and release their device locks) instead of leaving them
to the gate time-out; see ``plugin_utils/_interrupt``. Every other state runs the module as it is.
"""

from __future__ import annotations

from typing import Any

from ansible.plugins.action import ActionBase

from ansible_collections.ascend.cluster.plugins.plugin_utils import _interrupt as interrupt

GUARDED = ("staged", "gate")


class ActionModule(ActionBase):
    """Controller half of ``ascend.cluster.training_job``."""

    TRANSFERS_FILES = False
    _requires_connection = True

    def run(self, tmp: Any = None, task_vars: dict | None = None) -> dict:
        task_vars = task_vars or {}
        result = super().run(tmp, task_vars)
        args = self._task.args
        if args.get("state") not in GUARDED or self._task.check_mode:
            result.update(self._execute_module(module_args=args, task_vars=task_vars))
            return result
        with interrupt.Guard() as guard:
            try:
                result.update(self._execute_module(module_args=args, task_vars=task_vars))
            except interrupt.Interrupted as exc:
                job_root = args.get("job_root")
                result.update(
                    interrupt.release_staging(self, guard, exc.signum, str(args.get("job_id")), job_root, task_vars, args.get("grace"))
                )
        return result
