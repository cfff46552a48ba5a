# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter ``ascend.cluster.restart_plan``; documentation in ``restart_plan.yml``, logic in plugin_utils/_restart."""

from __future__ import annotations

from typing import Any

from ansible_collections.ascend.cluster.plugins.plugin_utils._errors import filter_errors


@filter_errors("restart_plan")
def restart_plan(
    summary: Any,
    watch: Any = None,
    diagnosis: Any = None,
    attempts: Any = None,
    max_restarts: int = 0,
    failed_at: Any = None,
) -> dict:
    # imported when called, not when Ansible loads the file (docs/contracts.md, filter files)
    from ansible_collections.ascend.cluster.plugins.plugin_utils import _restart as restart

    attempts = list(attempts or [])
    if (diagnosis or {}).get("job_id") not in (None, summary.get("job_id")):
        diagnosis = {}  # an earlier attempt's diagnosis says nothing of this one
    decision = restart.decide(summary, watch or {}, diagnosis or {}, attempts, int(max_restarts))
    entry = restart.record(len(attempts), str(summary.get("job_id") or ""), summary, decision, failed_at)
    return dict(decision, record=entry, attempts=attempts + [entry])


class FilterModule:
    def filters(self) -> dict:
        return {"restart_plan": restart_plan}
