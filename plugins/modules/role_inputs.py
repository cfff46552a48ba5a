#!/usr/bin/python
# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Documentation of the role_inputs action (it runs on the controller; there is no target side)."""

from __future__ import annotations

DOCUMENTATION = r"""
module: role_inputs
short_description: Check the inputs of several of this collection's roles for every host, in one task
version_added: 0.2.0
description:
  - Runs on the controller, once (use it with C(run_once)). Checks, for each host of O(hosts), the variables
    each role of O(roles) declares in its C(meta/argument_specs.yml) (entry point C(main)) - the same check Ansible
    inserts at the top of each role, which costs one task per host and role.
  - A playbook that runs several roles on many servers checks them all with this task, then loads the roles with
    C(rolespec_validate=false) (C(ansible.builtin.import_role)). C(playbooks/prepare.yml) does so.
  - A host's values are its own (inventory, facts, extra vars, set facts, as C(hostvars) gives them), else the
    play's (play vars, role defaults). A variable neither defines takes the spec's default.
  - Fails naming each wrong input once, with the hosts that have it.
author:
  - ascend.cluster contributors (!UNKNOWN)
options:
  roles:
    description: The roles whose inputs to check, V(firewall) or V(ascend.cluster.firewall); only this collection's.
    type: list
    elements: str
    required: true
  hosts:
    description: The hosts to check, usually C(ansible_play_hosts).
    type: list
    elements: str
    required: true
attributes:
  action:
    support: full
    description: An action plugin; the hosts are not contacted.
  check_mode:
    support: full
    description: The same check as in a normal run.
  diff_mode:
    support: none
    description: Nothing to show - it writes nothing.
  idempotent:
    support: full
    description: Reads only.
"""

EXAMPLES = r"""
- name: Check every stage's inputs for every server, once
  ascend.cluster.role_inputs:
    roles: [device_ip, firewall, net_health]
    hosts: "{{ ansible_play_hosts }}"
  run_once: true
  tags: [always]

- name: Device IPs (its inputs are checked above)
  ansible.builtin.import_role:
    name: ascend.cluster.device_ip
    rolespec_validate: false
"""

RETURN = r"""
problems:
  description: "One line per wrong input: the role, the error and the hosts that have it; empty when all are right."
  returned: always
  type: list
  elements: str
  sample: ["firewall: value of ascend_firewall_mode must be one of: disable, open_ports, none, got: off (h1, h2)"]
msg:
  description: What was checked, or that the validation failed, the problems one per line, and that nothing was changed or started.
  returned: always
  type: str
  sample: the inputs of 4 role(s) are right on 8 host(s)
"""
