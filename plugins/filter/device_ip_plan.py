# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter ``ascend.cluster.device_ip_plan``; documentation in ``device_ip_plan.yml``."""

from __future__ import annotations

from typing import Any

from ansible_collections.ascend.cluster.plugins.plugin_utils._errors import filter_errors


@filter_errors("device_ip_plan")
def device_ip_plan(
    servers: Any,
    layout: str,
    networks: Any,
    first_host: int = 100,
    server_step: int | None = None,
    pair_offset: int = 1,
    device_count: int = 8,
    gateway_host: int | None = None,
    netdetect: str | None = None,
) -> dict:
    # imported when called, not when Ansible loads the file (docs/contracts.md, filter files)
    from ansible_collections.ascend.cluster.plugins.plugin_utils._ip_plan import build_plan

    return build_plan(
        servers,
        layout,
        networks,
        first_host=first_host,
        server_step=server_step,
        pair_offset=pair_offset,
        device_count=device_count,
        gateway_host=gateway_host,
        netdetect=netdetect,
    )


class FilterModule:
    def filters(self) -> dict:
        return {"device_ip_plan": device_ip_plan}
