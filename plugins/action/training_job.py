# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action training_job: run the module; an interrupted staging wait or gate releases the job's runners.

A Ctrl-C (or SIGTERM) to ansible-playbook while ``state=staged`` waits for the ranks to stage, or
while ``state=gate`` opens the gate, stops the job on the server at once (``state=stop``: the abort
file makes the runners at the gate give up and release their device locks) instead of leaving them
to the gate time-out; see ``plugin_utils/_interrupt``. With ``barrier`` (the play's hosts), a
server's staging wait ends only once every listed server's has (``plugin_utils/_barrier``), so a
Ctrl-C during staging releases every server's runners, not only those still waiting. Every other
state runs the module as it is.
"""

from __future__ import annotations

from typing import Any

from ansible import constants as C
from ansible import context
from ansible.plugins.action import ActionBase

from ansible_collections.ascend.cluster.plugins.plugin_utils import _barrier as barrier
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
            directory = self._staging_barrier(args)
            try:
                try:
                    result.update(self._execute_module(module_args=args, task_vars=task_vars))
                finally:
                    if directory:  # whatever happened here, the other servers must not wait for this one
                        barrier.arrive(directory, str(task_vars.get("inventory_hostname")))
                if directory:
                    barrier.wait(directory, [str(host) for host in args["barrier"]], float(args.get("timeout") or 120.0) + 10.0)
            except interrupt.Interrupted as exc:
                job_root = args.get("job_root")
                result.update(
                    interrupt.release_staging(self, guard, exc.signum, str(args.get("job_id")), job_root, task_vars, args.get("grace"))
                )
        return result

    def _staging_barrier(self, args: dict) -> str:
        """The barrier directory of this staging wait ('' when there is none: another state, one host, too few forks)."""
        hosts = [str(host) for host in args.get("barrier") or []]
        if args.get("state") != "staged" or not barrier.applies(hosts, context.CLIARGS.get("forks")):
            return ""
        return barrier.path(C.DEFAULT_LOCAL_TMP, f"staged-{args.get('job_id')}")
