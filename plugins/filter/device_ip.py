# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The device_ip role's filters: the device IP plan computed, checked, and compared with the devices' facts.

Filters ``ascend.cluster.device_ip_plan``, ``ascend.cluster.validate_ip_plan``, ``ascend.cluster.device_ip_settled``;
each documented in the YAML file of its name beside this one."""

from __future__ import annotations

from typing import Any

from ansible_collections.ascend.cluster.plugins.plugin_utils._errors import filter_errors


@filter_errors("device_ip_plan")
def device_ip_plan(servers: Any, *args: Any, **kwargs: Any) -> dict:
    """``_net.ip_plan.build_plan``: its options (layout, networks, first_host, ...) and their defaults are stated there
    and in device_ip_plan.yml, not again here."""
    # imported when called, not when Ansible loads the file (docs/contracts.md, filter files)
    from ansible_collections.ascend.cluster.plugins.plugin_utils._net.ip_plan import build_plan

    return build_plan(servers, *args, **kwargs)


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
    from ansible_collections.ascend.cluster.plugins.plugin_utils._net.ip_plan import validate_plan

    return validate_plan(
        plan, chip=chip or None, layout=layout or None, replaced_netdetect=replaced_netdetect or None, servers=servers, facts=facts
    )


@filter_errors("device_ip_settled")
def device_ip_settled(entries: Any, facts: Any, hccn_conf: str | None = None) -> bool:
    # imported when called, not when Ansible loads the file (docs/contracts.md, filter files)
    from ansible_collections.ascend.cluster.plugins.plugin_utils._net.ip_plan import plan_settled

    return plan_settled(entries, facts, hccn_conf=hccn_conf or None)


# Every filter of this file, registered under its function's name (the name its YAML documentation has).
FILTERS = (device_ip_plan, validate_ip_plan, device_ip_settled)


class FilterModule:
    def filters(self) -> dict:
        return {function.__name__: function for function in FILTERS}
