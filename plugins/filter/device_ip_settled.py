# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter ``ascend.cluster.device_ip_settled``; documentation in ``device_ip_settled.yml``."""

from __future__ import annotations

from typing import Any

from ansible_collections.ascend.cluster.plugins.plugin_utils._errors import filter_errors


@filter_errors("device_ip_settled")
def device_ip_settled(entries: Any, facts: Any, hccn_conf: str | None = None) -> bool:
    # imported when called, not when Ansible loads the file (docs/contracts.md, filter files)
    from ansible_collections.ascend.cluster.plugins.plugin_utils._ip_plan import plan_settled

    return plan_settled(entries, facts, hccn_conf=hccn_conf or None)


class FilterModule:
    def filters(self) -> dict:
        return {"device_ip_settled": device_ip_settled}
