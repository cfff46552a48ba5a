# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter ``ascend.cluster.validate_ip_plan``; documentation in ``validate_ip_plan.yml``."""

from __future__ import annotations

from typing import Any

from ansible_collections.ascend.cluster.plugins.plugin_utils._errors import filter_errors


@filter_errors("validate_ip_plan")
def validate_ip_plan(
    plan: Any,
    chip: str | None = None,
    layout: str | None = None,
    replaced_netdetect: str | None = None,
    servers: Any = None,
    facts: Any = None,
) -> dict:
    # imported when called, not when Ansible loads the file (docs/contracts.md, filter files)
    from ansible_collections.ascend.cluster.plugins.plugin_utils._ip_plan import validate_plan

    return validate_plan(
        plan, chip=chip or None, layout=layout or None, replaced_netdetect=replaced_netdetect or None, servers=servers, facts=facts
    )


class FilterModule:
    def filters(self) -> dict:
        return {"validate_ip_plan": validate_ip_plan}
