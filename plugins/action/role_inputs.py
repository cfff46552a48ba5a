# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action role_inputs: check several roles' inputs for every host of the play, in one controller task.

See ``plugin_utils._role_inputs`` for why; the documentation is in ``plugins/modules/role_inputs.py``.
"""

from __future__ import annotations

from ansible_collections.ascend.cluster.plugins.plugin_utils._action import Action, Refusal
from ansible_collections.ascend.cluster.plugins.plugin_utils._role_inputs import (
    RoleInputsError,
    host_values,
    role_input_problems,
    role_options,
)

ARGUMENT_SPEC = {
    "roles": {"type": "list", "elements": "str", "required": True},
    "hosts": {"type": "list", "elements": "str", "required": True},
}


class ActionModule(Action):
    """``ascend.cluster.role_inputs``: reads the roles' specs and the hosts' variables, no connection (check mode too)."""

    _requires_connection = False

    ARGUMENT_SPEC = ARGUMENT_SPEC

    def act(self, args: dict, own: dict, task_vars: dict) -> dict:
        try:
            specs = {role: role_options(role) for role in args["roles"]}
        except RoleInputsError as exc:
            raise Refusal(str(exc)) from exc
        names = sorted({name for options in specs.values() for name in options})
        hostvars = task_vars.get("hostvars") or {}
        values = {
            host: host_values(names, hostvars[host] if host in hostvars else {}, task_vars, self._templar.template)
            for host in args["hosts"]
        }
        problems = role_input_problems(specs, values)
        if problems:
            return dict(
                failed=True,
                changed=False,
                problems=problems,
                msg="Validation of arguments failed:\n" + "\n".join(problems) + "\nNothing was changed or started.",
            )
        return dict(changed=False, problems=[], msg=f"the inputs of {len(specs)} role(s) are right on {len(values)} host(s)")
