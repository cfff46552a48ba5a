# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action clock_offset: measure a server's wall-clock offset against the controller, in one task.

Reads the server's clock ``samples`` times with one cheap shell command each (``date +%s.%N``,
over the connection the play already holds: no module is transferred or run), timing each on the
controller, and keeps the reading with the smallest round trip (``plugin_utils._launch.clock``). Then
judges the offset: a warning above ``warn_above`` seconds, a refusal above ``refuse_above``
unless ``allow``. The task never fails for the offset itself (the role prints every server's
offset first, then refuses naming all of them at once); it fails only when the clock cannot be read.
"""

from __future__ import annotations

from ansible_collections.ascend.cluster.plugins.plugin_utils._action import Action, Refusal
from ansible_collections.ascend.cluster.plugins.plugin_utils._launch.clock import measure_over

ARGUMENT_SPEC = {
    "samples": {"type": "int", "default": 5},
    "warn_above": {"type": "float", "default": 1.0},
    "refuse_above": {"type": "float", "default": 30.0},
    "allow": {"type": "bool", "default": False},
    "server": {"type": "str"},
}


class ActionModule(Action):
    """Controller-only ``ascend.cluster.clock_offset``; see the module docstring."""

    ARGUMENT_SPEC = ARGUMENT_SPEC

    def act(self, args: dict, own: dict, task_vars: dict) -> dict:
        if args["samples"] < 1:
            raise Refusal(f"samples must be 1 or more, not {args['samples']}")
        measured = measure_over(
            self, task_vars, args["samples"], args["warn_above"], args["refuse_above"], args["allow"], server=args["server"]
        )
        if measured.get("failed"):
            return measured
        if measured["status"] == "warn":
            measured = dict(measured, warnings=[measured["msg"]])
        return dict(measured, changed=False)
