"""The host_firewall action: guard and mode none on the controller, everything else in one module call."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleActionFail

from ansible_collections.ascend.cluster.plugins.action import host_firewall as action
from ansible_collections.ascend.cluster.plugins.modules import host_firewall as module
from tests.unit.plugins.action.fakes import action_for

SETTLED = {"changed": False, "mode": "open_ports", "backend": "ufw", "found": "ufw active", "action": "nothing to do"}


def run(args: dict, transport: str = "ssh", address: str = "10.0.0.1") -> tuple[dict, list]:
    """The action's result for ``args`` and the module calls it made (the module answers SETTLED)."""
    plugin, calls = action_for(action, args, transport=transport, address=address, answer=SETTLED)
    return plugin.run(task_vars={"inventory_hostname": "h1"}), calls


@pytest.mark.parametrize(
    ("args", "transport", "address", "expected", "module_called"),
    [
        ({"mode": "open_ports"}, "ssh", "10.0.0.1", SETTLED, True),
        ({"mode": "open_ports", "refuse_local": True}, "ssh", "10.0.0.1", SETTLED, True),
        ({"mode": "disable"}, "local", "localhost", {"changed": False, "mode": "open_ports"}, True),  # not asked to refuse
        ({"mode": "none"}, "ssh", "10.0.0.1", {"changed": False, **action.NOT_CHECKED}, False),
        ({"mode": "none", "refuse_local": True}, "local", "h1", {"changed": False, **action.NOT_CHECKED}, False),
        ({"mode": "disable", "refuse_local": True}, "local", "h1", {"failed": True, "changed": False}, False),
        ({"mode": "open_ports", "refuse_local": "yes"}, "ssh", "127.0.0.1", {"failed": True}, False),
    ],
    ids=["settled", "refuse, remote", "local allowed", "mode none", "mode none, local", "local refused", "loopback refused"],
)
def test_one_call_per_host_and_none_for_mode_none_or_a_refusal(args, transport, address, expected, module_called):
    result, calls = run(args, transport, address)
    assert {key: result.get(key) for key in expected} == expected
    assert bool(calls) is module_called
    if module_called:
        assert calls == [{"module_name": "ascend.cluster.host_firewall", "module_args": args}]
    if result.get("failed"):
        assert result["msg"].startswith("h1 is reached with the local connection: the firewall role would change")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"mode": "off"}, "value of mode must be one of: disable, open_ports, none"),
        ({}, "missing required arguments: mode"),
        ({"mode": "disable", "refuse_local": "maybe"}, "refuse_local"),
        ({"mode": "disable", "ports": [22]}, r"unknown options: ports \(this action takes: .*mode"),
    ],
    ids=["unknown mode", "no mode", "not a bool", "unknown option"],
)
def test_bad_options_are_refused_before_any_call(args, message):
    with pytest.raises(AnsibleActionFail, match=message):
        run(args)


def test_the_action_validates_against_the_module_spec():
    assert action.ARGS is module.ARGS
