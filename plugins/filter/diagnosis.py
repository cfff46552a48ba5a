# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter ``ascend.cluster.diagnosis``; documentation in ``diagnosis.yml``, logic in plugin_utils/_diagnose.py."""

from __future__ import annotations

from typing import Any

from ansible_collections.ascend.cluster.plugins.plugin_utils._errors import filter_errors


@filter_errors("diagnosis")
def diagnosis(
    servers: Any,
    hostvars: Any,
    job: str = "_ascend_diag",
    npu: str = "_ascend_diag_npu",
    clock: str = "_ascend_diag_clock",
    firewall: str = "_ascend_diag_firewall",
    connect_timeout: Any = 120,
    group_view: Any = None,
) -> dict:
    # imported when called, not when Ansible loads the file (docs/contracts.md, filter files)
    from ansible_collections.ascend.cluster.plugins.plugin_utils._diagnose import from_hostvars
    from ansible_collections.ascend.cluster.plugins.plugin_utils._job_report import with_group_problem

    names = {"job": job, "npu": npu, "clock": clock, "firewall": firewall}
    found = from_hostvars(list(servers), hostvars, names, float(connect_timeout), group_view)
    return with_group_problem(found, list(servers), hostvars, job)


class FilterModule:
    def filters(self) -> dict:
        return {"diagnosis": diagnosis}
