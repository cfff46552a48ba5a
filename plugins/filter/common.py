# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters several roles and playbooks use: a playbook's -e problems, the tool paths a host's variables give, text tables.

Filters ``ascend.cluster.input_problems``, ``ascend.cluster.tool_paths``, ``ascend.cluster.text_table``; each documented in the YAML file of its name beside this one."""

from __future__ import annotations

from typing import Any

from ansible.errors import AnsibleFilterError

from ansible_collections.ascend.cluster.plugins.plugin_utils._errors import filter_errors


@filter_errors("input_problems")
def input_problems(given: Any, declared: Any, hosts: Any = None, pattern: Any = None, present: Any = ()) -> list:
    # imported when called, not when Ansible loads the file (docs/contracts.md, filter files)
    from ansible_collections.ascend.cluster.plugins.plugin_utils._inputs import input_problems as _input_problems

    return _input_problems(given, declared, hosts=hosts, pattern=pattern, present=present or ())


@filter_errors("tool_paths")
def tool_paths(host_vars: Any, cann_dir: bool = False) -> dict:
    # imported when called, not when Ansible loads the file (docs/contracts.md, filter files)
    from ansible_collections.ascend.cluster.plugins.plugin_utils._tool_paths import tool_paths as _tool_paths

    return _tool_paths(host_vars, cann_dir=cann_dir)


def text_table(rows, columns, headers=None, ok_column=None, ok_values=("OK",), max_ok=None, more_hint=""):
    # imported when called, not when Ansible loads the file (docs/contracts.md, filter files)
    from ansible_collections.ascend.cluster.plugins.plugin_utils._text_table import TableError
    from ansible_collections.ascend.cluster.plugins.plugin_utils._text_table import text_table as _text_table

    try:
        return _text_table(rows, columns, headers, ok_column=ok_column, ok_values=ok_values, max_ok=max_ok, more_hint=more_hint)
    except TableError as exc:
        raise AnsibleFilterError(f"text_table: {exc}") from exc


# Every filter of this file, registered under its function's name (the name its YAML documentation has).
FILTERS = (input_problems, tool_paths, text_table)


class FilterModule:
    def filters(self) -> dict:
        return {function.__name__: function for function in FILTERS}
