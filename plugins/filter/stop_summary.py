# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter ``ascend.cluster.stop_summary``; documentation in ``stop_summary.yml``, logic in plugin_utils."""

from __future__ import annotations

from typing import Any

from ansible_collections.ascend.cluster.plugins.plugin_utils._errors import filter_errors


@filter_errors("stop_summary")
def stop_summary(results: Any, check_mode: bool = False) -> str:
    # imported when called, not when Ansible loads the file (docs/contracts.md, filter files)
    from ansible_collections.ascend.cluster.plugins.plugin_utils._job_report import stop_summary as _stop_summary

    return _stop_summary(results, check_mode=check_mode)


class FilterModule:
    def filters(self) -> dict:
        return {"stop_summary": stop_summary}
