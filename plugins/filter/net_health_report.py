# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter ``ascend.cluster.net_health_report``; documentation in ``net_health_report.yml``."""

from __future__ import annotations

from typing import Any

from ansible_collections.ascend.cluster.plugins.plugin_utils._errors import filter_errors


@filter_errors("net_health_report")
def net_health_report(
    servers: Any,
    chip: str | None = None,
    layout: str | None = "auto",
    check_tls: bool = True,
    check_conf: bool = True,
    check_mode: bool = False,
    all_rows: bool = False,
    ok_rows: int = 4,
    left_out: Any = (),
) -> dict:
    # imported when called, not when Ansible loads the file (docs/contracts.md, filter files)
    from ansible_collections.ascend.cluster.plugins.plugin_utils._net_health import health_report, health_summary

    report = health_report(servers, chip=chip or None, layout=layout, check_tls=check_tls, check_conf=check_conf, check_mode=check_mode)
    return health_summary(report, all_rows=all_rows, ok_rows=ok_rows, check_mode=check_mode, left_out=left_out or ())


class FilterModule:
    def filters(self) -> dict:
        return {"net_health_report": net_health_report}
