# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action host_firewall: the controller's half of ``ascend.cluster.host_firewall``, same task.

Checks the options against the module's own spec, refuses the controller's own firewall
(``refuse_local``, ``plugin_utils._net.firewall_guard``) and answers ``mode: none`` itself - both
without a round trip to the host - then runs the module, which reads, plans and settles the
firewall. So the firewall role needs one task per host for all of it.
"""

from __future__ import annotations

from ansible_collections.ascend.cluster.plugins.module_utils._host.firewall import MODE_NONE, NOT_CHECKED
from ansible_collections.ascend.cluster.plugins.modules.host_firewall import ARGS
from ansible_collections.ascend.cluster.plugins.plugin_utils._action import Action, Refusal
from ansible_collections.ascend.cluster.plugins.plugin_utils._net.firewall_guard import local_refusal


class ActionModule(Action):
    """``ascend.cluster.host_firewall``: guard and mode none here, the rest in the module (check mode: the module's)."""

    ARGUMENT_SPEC = ARGS

    def act(self, args: dict, own: dict, task_vars: dict) -> dict:
        host = str(task_vars.get("inventory_hostname", self._play_context.remote_addr or ""))
        refusal = local_refusal(host, self._connection.transport, self._play_context.remote_addr, args["mode"], refuse=args["refuse_local"])
        if refusal:
            raise Refusal(refusal)
        if args["mode"] == MODE_NONE:
            return dict(changed=False, **NOT_CHECKED)
        # the task's options as given: the module validates them itself (its defaults stay its own)
        return self.module("host_firewall", dict(self._task.args), task_vars)
