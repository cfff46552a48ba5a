# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action hccn_config: the controller's half of ``ascend.cluster.hccn_config``, same task.

With ``facts`` (this host's ``ascend_npu`` facts of this run) that already show every listed
device as wanted, the task is skipped here, without a round trip: the module would set and
rewrite nothing. The decision is ``plugin_utils._net.ip_plan.plan_settled``, in Python on the
controller, where a ``when`` with the ``device_ip_settled`` filter cost every host's worker a
load of the collection's filter plugins. Otherwise the module runs (without ``facts``).
"""

from __future__ import annotations

from typing import Any

from ansible_collections.ascend.cluster.plugins.module_utils._options import DEFAULT_HCCN_CONF
from ansible_collections.ascend.cluster.plugins.plugin_utils._action import Action
from ansible_collections.ascend.cluster.plugins.plugin_utils._net.ip_plan import plan_settled

SETTLED = "the facts of this run already show every listed device as wanted: nothing to set"


def settled(args: dict[str, Any]) -> bool:
    """Whether the task's ``facts`` show its ``devices`` set, with the ``hccn_conf`` it names agreeing."""
    facts = args.get("facts")
    return bool(facts) and plan_settled(args.get("devices"), facts, hccn_conf=args.get("hccn_conf") or DEFAULT_HCCN_CONF)


class ActionModule(Action):
    """``ascend.cluster.hccn_config``: skipped here when the facts show it settled; else the module."""

    # the facts decide here; the module does not need them (a smaller payload)
    OWN = ("facts",)

    def act(self, args: dict, own: dict, task_vars: dict) -> dict:
        if settled(dict(args, facts=own.get("facts"))):
            return {"changed": False, "skipped": True, "skip_reason": SETTLED}
        return self.module("hccn_config", args, task_vars)
