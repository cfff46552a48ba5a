# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter ``ascend.cluster.device_ip_plan``; documentation in ``device_ip_plan.yml``."""

from __future__ import annotations

from typing import Any

from ansible_collections.ascend.cluster.plugins.plugin_utils._errors import filter_errors


@filter_errors("device_ip_plan")
def device_ip_plan(servers: Any, *args: Any, **kwargs: Any) -> dict:
    """``_ip_plan.build_plan``: its options (layout, networks, first_host, ...) and their defaults are stated there
    and in device_ip_plan.yml, not again here."""
    # imported when called, not when Ansible loads the file (docs/contracts.md, filter files)
    from ansible_collections.ascend.cluster.plugins.plugin_utils._ip_plan import build_plan

    return build_plan(servers, *args, **kwargs)


class FilterModule:
    def filters(self) -> dict:
        return {"device_ip_plan": device_ip_plan}
