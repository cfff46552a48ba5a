# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action host_firewall: the controller's half of ``ascend.cluster.host_firewall``, same task.

Checks the options against the module's own spec, refuses the controller's own firewall
(``refuse_local``, ``plugin_utils._local_guard``) and answers ``mode: none`` itself - both
without a round trip to the host - then runs the module, which reads, plans and settles the
firewall. So the firewall role needs one task per host for all of it.
"""

from __future__ import annotations

from typing import Any

from ansible.plugins.action import ActionBase

from ansible_collections.ascend.cluster.plugins.module_utils._firewall import MODE_NONE, NOT_CHECKED
from ansible_collections.ascend.cluster.plugins.modules.host_firewall import ARGS
from ansible_collections.ascend.cluster.plugins.plugin_utils._local_guard import local_refusal


class ActionModule(ActionBase):
    """``ascend.cluster.host_firewall``: guard and mode none here, the rest in the module (check mode: the module's)."""

    def run(self, tmp: Any = None, task_vars: dict | None = None) -> dict:
        result = super().run(tmp, task_vars)
        task_vars = task_vars or {}
        _spec, args = self.validate_argument_spec(argument_spec=ARGS)
        host = str(task_vars.get("inventory_hostname", self._play_context.remote_addr or ""))
        refusal = local_refusal(host, self._connection.transport, self._play_context.remote_addr, args["mode"], refuse=args["refuse_local"])
        if refusal:
            return dict(result, failed=True, changed=False, msg=refusal)
        if args["mode"] == MODE_NONE:
            return dict(result, changed=False, **NOT_CHECKED)
        result.update(
            self._execute_module(module_name="ascend.cluster.host_firewall", module_args=dict(self._task.args), task_vars=task_vars)
        )
        return result
