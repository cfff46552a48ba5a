"""Several roles' inputs checked for every host at once (plugin_utils._role_inputs), against the roles' own specs."""

from __future__ import annotations

import re

import pytest

from ansible_collections.ascend.cluster.plugins.plugin_utils._role_inputs import (
    ROLES_DIR,
    RoleInputsError,
    host_values,
    role_input_problems,
    role_options,
)

FIREWALL = {
    "ascend_firewall_mode": {"type": "str", "choices": ["disable", "open_ports", "none"], "default": "disable"},
    "ascend_firewall_ssh_port": {"type": "int"},
}
DEVICE_IP = {"ascend_device_ip_parallel": {"type": "int", "default": 16}, "ascend_device_ips": {"type": "list", "elements": "dict"}}
MODE_OFF = "value of ascend_firewall_mode must be one of: disable, open_ports, none, got: off"


@pytest.mark.parametrize(
    ("values_by_host", "problems"),
    [
        ({"h1": {}, "h2": {}}, []),  # nothing set: the defaults
        ({"h1": {"ascend_firewall_mode": "open_ports", "ascend_firewall_ssh_port": "2222", "other": "x"}}, []),  # converted, others ignored
        ({"h1": {"ascend_firewall_mode": "off"}, "h2": {}}, [f"firewall: {re.escape(MODE_OFF)} \\(h1\\)$"]),
        # the same problem on several hosts: said once, naming them (five, then a count)
        (
            {f"h{i}": {"ascend_firewall_mode": "off"} for i in range(1, 8)},
            [f"firewall: {MODE_OFF} (h1, h2, h3, h4, h5 and 2 more)"],  # exactly
        ),
        # two roles, two problems on different hosts, in role order
        (
            {"h1": {"ascend_device_ip_parallel": "many"}, "h2": {"ascend_firewall_ssh_port": [22], "ascend_device_ips": "none"}},
            [
                r"firewall: argument 'ascend_firewall_ssh_port' is of type list and we were unable to convert to int: .* \(h2\)$",
                r"device_ip: argument 'ascend_device_ip_parallel' is of type str and we were unable to convert to int: .* \(h1\)$",
                r"device_ip: Elements value for option 'ascend_device_ips' is of type str .* \(h2\)$",
            ],
        ),
        ({}, []),  # no hosts
    ],
    ids=["defaults", "right values", "one wrong", "the same on seven hosts", "two roles", "no hosts"],
)
def test_each_wrong_input_is_named_once_with_its_hosts(values_by_host, problems):
    found = role_input_problems({"firewall": FIREWALL, "device_ip": DEVICE_IP}, values_by_host)
    # Ansible's own wording of each error, matched where it is long
    assert len(found) == len(problems) and all(f == p or re.match(p, f) for f, p in zip(found, problems)), found


def test_a_required_input_that_no_host_sets_is_named():
    spec = {"ascend_thing": {"type": "str", "required": True}}
    assert role_input_problems({"r": spec}, {"h1": {}, "h2": {"ascend_thing": "x"}}) == ["r: missing required arguments: ascend_thing (h1)"]


@pytest.mark.parametrize(
    ("own", "play", "values"),
    [
        ({"a": 1}, {"a": "{{ 2 }}", "b": "{{ 3 }}"}, {"a": 1, "b": "templated {{ 3 }}"}),  # the host's own first
        ({}, {}, {}),  # neither: left to the spec's default
        ({"c": 1}, {"d": 2}, {}),  # not asked for
    ],
    ids=["own then play", "neither", "other names"],
)
def test_a_hosts_values_are_its_own_else_the_plays(own, play, values):
    assert host_values(["a", "b"], own, play, lambda value: f"templated {value}") == values


@pytest.mark.parametrize("role", ["firewall", "ascend.cluster.firewall", "device_ip", "net_health", "rank_table"])
def test_the_options_of_this_collections_roles_are_read_from_their_specs(role):
    options = role_options(role)
    prefix = "ascend_" + role.rsplit(".", 1)[-1].split("_")[0]
    assert options and any(name.startswith(prefix) for name in options)


@pytest.mark.parametrize(
    ("role", "message"),
    [
        ("community.general.foo", "is not a role of ascend.cluster"),
        ("../firewall", "is not a role of ascend.cluster"),
        ("", "is not a role of ascend.cluster"),
        ("no_such_role", "is not a role of ascend.cluster with an argument spec"),
    ],
)
def test_other_roles_are_refused(role, message):
    with pytest.raises(RoleInputsError, match=message):
        role_options(role)


def test_a_spec_without_a_main_entry_point_is_refused(tmp_path):
    (tmp_path / "r" / "meta").mkdir(parents=True)
    (tmp_path / "r" / "meta" / "argument_specs.yml").write_text("argument_specs:\n  other: {options: {}}\n")
    with pytest.raises(RoleInputsError, match="has no 'main' entry point"):
        role_options("r", roles_dir=tmp_path)
    assert ROLES_DIR.name == "roles"
