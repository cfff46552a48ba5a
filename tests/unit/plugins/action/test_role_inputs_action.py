"""The role_inputs action: every host's own values, else the play's, checked against the roles' specs in one task."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from ansible.errors import AnsibleActionFail

from ansible_collections.ascend.cluster.plugins.action import role_inputs as action
from tests.unit.plugins.action.fakes import action_for


def run(args: dict, hostvars: dict, play: dict | None = None) -> dict:
    templar = SimpleNamespace(template=lambda value: "open_ports" if value == "{{ 'open_ports' }}" else value)
    plugin, _calls = action_for(action, args, transport="local", templar=templar)
    return plugin.run(task_vars={"hostvars": hostvars, **(play or {})})


@pytest.mark.parametrize(
    ("hostvars", "play", "failed", "problems"),
    [
        ({"h1": {}, "h2": {}}, {}, False, []),
        # the play's value, templated, for hosts without their own
        ({"h1": {}, "h2": {"ascend_firewall_mode": "none"}}, {"ascend_firewall_mode": "{{ 'open_ports' }}"}, False, []),
        # a host's own value wins over the play's
        (
            {"h1": {"ascend_firewall_mode": "off"}, "h2": {}},
            {"ascend_firewall_mode": "disable"},
            True,
            ["firewall: value of ascend_firewall_mode must be one of: disable, open_ports, none, got: off (h1)"],
        ),
        # a host the play names but hostvars does not know: the play's values
        ({"h1": {}}, {"ascend_firewall_hccl_port_count": "many"}, True, None),
    ],
    ids=["defaults", "play value templated", "host value wins", "unknown host"],
)
def test_each_hosts_values_are_checked(hostvars, play, failed, problems):
    result = run({"roles": ["firewall"], "hosts": ["h1", "h2"]}, hostvars, play)
    assert bool(result.get("failed")) is failed
    if problems is not None:
        assert result["problems"] == problems
    if failed:
        assert result["msg"].startswith("Validation of arguments failed:\nfirewall: ")
        assert result["msg"].endswith(")\nNothing was changed or started.")  # the playbooks' refusals end so
    else:
        assert result["msg"] == "the inputs of 1 role(s) are right on 2 host(s)"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"roles": ["firewall"]}, "missing required arguments: hosts"),
        ({"roles": "firewall", "hosts": 3, "x": 1}, r"unknown options: x \(this action takes: hosts, roles\)"),
    ],
)
def test_bad_options_are_refused(args, message):
    with pytest.raises(AnsibleActionFail, match=message):
        run(args, {})


def test_a_role_of_another_collection_is_refused():
    result = run({"roles": ["community.general.foo"], "hosts": ["h1"]}, {"h1": {}})
    assert result["failed"] and result["msg"] == "'community.general.foo' is not a role of ascend.cluster"
