# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Check the inputs of several roles for every host at once, against the roles' own argument specs.

Ansible checks a role's ``meta/argument_specs.yml`` with a task it inserts at the top of the role,
which runs on every host: one worker per host and role. A playbook that runs several of this
collection's roles on many servers (prepare.yml) checks them all here instead, in one task on
the controller, and loads the roles with ``rolespec_validate: false``. Same specs, same checks
(``ArgumentSpecValidator`` as Ansible's ``validate_argument_spec`` uses it); one message naming
each wrong input once with the hosts that have it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

COLLECTION = "ascend.cluster"
ROLES_DIR = Path(__file__).resolve().parents[2] / "roles"
ENTRY_POINT = "main"
SHOWN_HOSTS = 5  # hosts named per problem; the rest are counted


class RoleInputsError(ValueError):
    """A role that is not one of this collection's, or has no argument spec for its main entry point."""


def role_options(role: str, roles_dir: Path = ROLES_DIR) -> dict[str, Any]:
    """The ``options`` of ``role``'s main entry point (``firewall`` or ``ascend.cluster.firewall``)."""
    name = role[len(COLLECTION) + 1 :] if role.startswith(COLLECTION + ".") else role
    if not name or "." in name or "/" in name:
        raise RoleInputsError(f"{role!r} is not a role of {COLLECTION}")
    path = roles_dir / name / "meta" / "argument_specs.yml"
    try:
        specs = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except FileNotFoundError:
        raise RoleInputsError(f"{role!r} is not a role of {COLLECTION} with an argument spec (no {path})") from None
    entry = (specs.get("argument_specs") or {}).get(ENTRY_POINT)
    if not isinstance(entry, Mapping):
        raise RoleInputsError(f"{path} has no {ENTRY_POINT!r} entry point")
    return dict(entry.get("options") or {})


def host_values(names: Iterable[str], own: Mapping[str, Any], play: Mapping[str, Any], template: Callable[[Any], Any]) -> dict[str, Any]:
    """The values ``names`` take on one host: its own (``hostvars[host]``), else the play's, templated.

    ``own`` holds what belongs to the host (inventory, facts, extra vars, set facts), already
    templated by ``hostvars``; ``play`` the play's variables (play vars, role defaults), raw.
    A name neither defines is left out: the spec's default applies.
    """
    values = {}
    for name in names:
        if name in own:
            values[name] = own[name]
        elif name in play:
            values[name] = template(play[name])
    return values


def _key(values: Mapping[str, Any]) -> str:
    return json.dumps(values, sort_keys=True, default=repr)


def role_input_problems(specs: Mapping[str, Mapping[str, Any]], values_by_host: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """One line per wrong input, ``<role>: <error> (<hosts>)``, in role then first-host order; [] when all are right.

    ``specs`` maps each role to its options, ``values_by_host`` each host to its variables (only
    those a role declares are checked). Hosts with the same values are checked once.
    """
    hosts_by_problem: dict[tuple[str, str], list[str]] = {}
    for role, options in specs.items():
        validator = ArgumentSpecValidator(dict(options))
        checked: dict[str, list[str]] = {}
        for host, variables in values_by_host.items():
            params = {name: variables[name] for name in options if name in variables}
            key = _key(params)
            if key not in checked:
                checked[key] = list(validator.validate(params, validate_role_argument_spec=True).error_messages)
            for error in checked[key]:
                hosts_by_problem.setdefault((role, error), []).append(host)
    return [f"{role}: {error} ({_hosts(hosts)})" for (role, error), hosts in hosts_by_problem.items()]


def _hosts(hosts: list[str]) -> str:
    shown = ", ".join(hosts[:SHOWN_HOSTS])
    more = len(hosts) - SHOWN_HOSTS
    return f"{shown} and {more} more" if more > 0 else shown
