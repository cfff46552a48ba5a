# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Lookup ``ascend.cluster.extra_vars``: the names of the variables given with ``-e``."""

from __future__ import annotations

DOCUMENTATION = r"""
name: extra_vars
short_description: The names of the variables given on the command line with -e
version_added: 0.1.0
author:
  - ascend.cluster contributors (!UNKNOWN)
description:
  - Returns the names of the extra vars of this run, sorted, exactly as C(ansible-playbook) read them
    from its C(-e) / C(--extra-vars) options (C(key=value), JSON/YAML and C(@file) alike).
  - Ansible does not tell a play which of its variables came from C(-e); this lookup reads them where
    the variable manager read them (C(ansible.utils.vars.load_extra_vars), cached for the run), so a
    variable set in the inventory or a role is never mistaken for one given on the command line.
  - Limits - only the C(ansible-playbook) / C(ansible) command lines have extra vars (so does
    ansible-runner and AWX, which call them); a run started from Python without the CLI returns an empty
    list. The values are the raw ones; read the templated values with C(ansible.builtin.vars).
options: {}
"""

EXAMPLES = r"""
- name: Refuse a typo of np, such as -e nps=16 (did you mean np?)
  ansible.builtin.fail:
    msg: "{{ problems | join('; ') }}"
  vars:
    names: "{{ query('ascend.cluster.extra_vars') }}"
    given: "{{ dict(names | zip(query('ansible.builtin.vars', *names))) }}"
    problems: "{{ given | ascend.cluster.input_problems({'np': {'type': 'int'}}) }}"
  when: problems | length > 0
"""

RETURN = r"""
_raw:
  description: The names of the extra vars, sorted; empty when none were given.
  type: list
  elements: str
"""


from typing import Any

from ansible.plugins.lookup import LookupBase
from ansible.utils.vars import load_extra_vars


class LookupModule(LookupBase):
    def run(self, terms: list, variables: Any = None, **kwargs: Any) -> list:
        if self._loader is None:  # every lookup Ansible runs has one
            return []
        return sorted(load_extra_vars(self._loader))
