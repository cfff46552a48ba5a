# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter ``ascend.cluster.rank_rows``; documentation in ``rank_rows.yml``."""

from __future__ import annotations

from typing import Any

from ansible_collections.ascend.cluster.plugins.plugin_utils._errors import filter_errors


@filter_errors("rank_rows")
def rank_rows(hosts: Any, hostvars: Any, result: str) -> list:
    # imported when called, not when Ansible loads the file (docs/contracts.md, filter files)
    from ansible_collections.ascend.cluster.plugins.plugin_utils._job_report import rank_rows as _rank_rows

    return _rank_rows(hosts, hostvars, result)


class FilterModule:
    def filters(self) -> dict:
        return {"rank_rows": rank_rows}
