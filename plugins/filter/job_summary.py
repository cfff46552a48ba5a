# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter ``ascend.cluster.job_summary``; documentation in ``job_summary.yml``."""

from __future__ import annotations

from typing import Any

from ansible_collections.ascend.cluster.plugins.plugin_utils._errors import filter_errors


@filter_errors("job_summary")
def job_summary(
    hosts: Any,
    hostvars: Any,
    result: str,
    job_id: str = "",
    kind: str = "train",
    all_rows: bool = False,
    ok_rows: int = 4,
    failure: Any = None,
    message: str = "",
    attempts: Any = None,
    resumed: Any = None,
) -> dict:
    # imported when called, not when Ansible loads the file (docs/contracts.md, filter files)
    from ansible_collections.ascend.cluster.plugins.plugin_utils._job_report import job_summary as _job_summary
    from ansible_collections.ascend.cluster.plugins.plugin_utils._restart import summarised

    summary = _job_summary(
        hosts, hostvars, result, job_id=job_id, kind=kind, all_rows=all_rows, ok_rows=ok_rows, failure=failure, message=message
    )
    return summarised(summary, list(attempts or []), resumed=list(resumed or []))


class FilterModule:
    def filters(self) -> dict:
        return {"job_summary": job_summary}
