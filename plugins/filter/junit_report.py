# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter ``ascend.cluster.junit_report``; documentation in ``junit_report.yml``, logic in plugin_utils."""

from __future__ import annotations

from typing import Any

from ansible_collections.ascend.cluster.plugins.plugin_utils._errors import filter_errors

KINDS = ("smoke", "train", "prepare", "reached")


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
        raise ClusterSpecError(f"kind must be one of {', '.join(KINDS)}, not {kind!r}")
    return _junit.junit_xml(suite or f"ascend.cluster.{options.get('playbook') or kind}", cases)


class FilterModule:
    def filters(self) -> dict:
        return {"junit_report": junit_report}
