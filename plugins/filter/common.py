# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters several roles and playbooks use: a playbook's -e problems, the tool paths a host's variables give, text tables.

Filters ``ascend.cluster.input_problems``, ``ascend.cluster.tool_paths``, ``ascend.cluster.text_table``,
``ascend.cluster.junit_report``; each documented in the YAML file of its name beside this one."""

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


JUNIT_KINDS = ("smoke", "train", "prepare", "reached")  # the reports junit_report makes


@filter_errors("junit_report")
def junit_report(data: Any, kind: str, hostvars: Any = None, suite: str = "", **options: Any) -> str:
    # imported when called, not when Ansible loads the file (docs/contracts.md, filter files)
    from ansible_collections.ascend.cluster.plugins.plugin_utils import _junit
    from ansible_collections.ascend.cluster.plugins.plugin_utils._errors import ClusterSpecError

    if kind == "smoke":
        cases = _junit.smoke_cases(data)
    elif kind == "train":
        cases = _junit.train_cases(
            list(data or []),
            hostvars or {},
            options.get("summary"),
            options.get("refusal"),
            options.get("stage_failures") or [],
            options.get("remaining"),
            str(options.get("job_id") or ""),
        )
    elif kind == "prepare":
        cases = _junit.prepare_cases(
            list(data or []), hostvars or {}, options.get("net_health"), bool(options.get("rank_table_written")), options.get("remaining")
        )
    elif kind == "reached":
        cases = _junit.reached_cases(str(options.get("playbook") or "run"), list(data or []), list(options.get("lost") or []), hostvars)
    else:
        raise ClusterSpecError(f"kind must be one of {', '.join(JUNIT_KINDS)}, not {kind!r}")
    return _junit.junit_xml(suite or f"ascend.cluster.{options.get('playbook') or kind}", cases)


# Every filter of this file, registered under its function's name (the name its YAML documentation has).
FILTERS = (input_problems, tool_paths, text_table, junit_report)


class FilterModule:
    def filters(self) -> dict:
        return {function.__name__: function for function in FILTERS}
