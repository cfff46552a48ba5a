# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter ``ascend.cluster.smoke_report``; documentation in ``smoke_report.yml``."""

from __future__ import annotations

from typing import Any

from ansible_collections.ascend.cluster.plugins.plugin_utils._errors import filter_errors


@filter_errors("smoke_report")
def smoke_report(hosts: Any, hostvars: Any, **kwargs: Any) -> dict:
    # imported when called, not when Ansible loads the file (docs/contracts.md, filter files)
    from ansible_collections.ascend.cluster.plugins.plugin_utils._smoke import smoke_report as _smoke_report

    return _smoke_report(hosts, hostvars, **kwargs)


class FilterModule:
    def filters(self) -> dict:
        return {"smoke_report": smoke_report}
