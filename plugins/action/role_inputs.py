# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action role_inputs: check several roles' inputs for every host of the play, in one controller task.

See ``plugin_utils._role_inputs`` for why; the documentation is in ``plugins/modules/role_inputs.py``.
"""

from __future__ import annotations

from typing import Any

from ansible.plugins.action import ActionBase

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


class ActionModule(ActionBase):
    """``ascend.cluster.role_inputs``: reads the roles' specs and the hosts' variables, no connection (check mode too)."""

    _requires_connection = False

    def run(self, tmp: Any = None, task_vars: dict | None = None) -> dict:
        result = super().run(tmp, task_vars)
        task_vars = task_vars or {}
        _spec, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        try:
            specs = {role: role_options(role) for role in args["roles"]}
        except RoleInputsError as exc:
            return dict(result, failed=True, changed=False, msg=str(exc))
        names = sorted({name for options in specs.values() for name in options})
        hostvars = task_vars.get("hostvars") or {}
        values = {
            host: host_values(names, hostvars[host] if host in hostvars else {}, task_vars, self._templar.template)
            for host in args["hosts"]
        }
        problems = role_input_problems(specs, values)
        if problems:
            return dict(
                result,
                failed=True,
                changed=False,
                problems=problems,
                msg="Validation of arguments failed:\n" + "\n".join(problems) + "\nNothing was changed or started.",
            )
        return dict(result, changed=False, problems=[], msg=f"the inputs of {len(specs)} role(s) are right on {len(values)} host(s)")
