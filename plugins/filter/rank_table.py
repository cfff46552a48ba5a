# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rank_table role's filters, and the rank table helpers for playbooks of one's own: the table built and checked, the devices selected, each host's ranks.

Filters ``ascend.cluster.rank_table``, ``ascend.cluster.validate_rank_table``, ``ascend.cluster.rank_plan``,
``ascend.cluster.select_devices``, ``ascend.cluster.device_range``, ``ascend.cluster.npu_env``,
``ascend.cluster.servers_from_facts``, ``ascend.cluster.rank_entries``, ``ascend.cluster.rank_layout``,
``ascend.cluster.missing_device_ips``, ``ascend.cluster.missing_superpod_ids``; each documented in the YAML file of its
name beside this one."""

from __future__ import annotations

from typing import Any

from ansible.errors import AnsibleFilterError
from ansible.module_utils.parsing.convert_bool import boolean
from ansible.utils.display import Display

from ansible_collections.ascend.cluster.plugins.plugin_utils._errors import filter_errors


@filter_errors("rank_table")
def rank_table(
    servers: Any,
    version: Any = None,
    order: str = "server_id",
    status: str = "completed",
    chip: str | None = None,
    allow_partial_servers: bool = False,
    board_id: str | None = None,
    chip_info: str | None = None,
    deploy_mode: str | None = None,
    group_name: str | None = None,
    para_plane_nic_location: str | None = None,
    para_plane_nic_name: list | None = None,
) -> dict:
    # imported when called, not when Ansible loads the file (docs/contracts.md, filter files)
    from ansible_collections.ascend.cluster.plugins.plugin_utils._rank.table import build_rank_table

    return build_rank_table(
        servers,
        version=version,
        order=order,
        status=status,
        chip=chip,
        allow_partial_servers=allow_partial_servers,
        board_id=board_id,
        chip_info=chip_info,
        deploy_mode=deploy_mode,
        group_name=group_name,
        para_plane_nic_location=para_plane_nic_location,
        para_plane_nic_name=para_plane_nic_name,
        warn=lambda text: Display().warning(f"rank_table: {text}"),
    )


@filter_errors("validate_rank_table")
def validate_rank_table(table: Any, chip: str | None = None, allow_partial_servers: bool = False, version: Any = None) -> dict:
    # imported when called, not when Ansible loads the file (docs/contracts.md, filter files)
    from ansible_collections.ascend.cluster.plugins.plugin_utils._rank.table import validate_rank_table as _validate

    return _validate(table, chip=chip, allow_partial_servers=allow_partial_servers, version=version)


BOOLEANS = ("spread", "allow_partial_servers")


@filter_errors("rank_plan")
def rank_plan(hosts: Any, **options: Any) -> dict:
    """The play's servers, the job's selection, its rank table and every host's slice, in one call.

    The options are ``plugin_utils._rank.plan.rank_plan``'s (see rank_plan.yml); the booleans are taken as the
    role passes them (strings from extra vars included).
    """
    # imported when called, not when Ansible loads the file (docs/contracts.md, filter files)
    from ansible_collections.ascend.cluster.plugins.plugin_utils._rank.plan import rank_plan as _rank_plan

    for name in BOOLEANS:
        if name in options:
            options[name] = boolean(options[name], strict=True)
    options["npu_env"] = str(options.get("npu_env") or "")
    return _rank_plan(hosts, warn=lambda text: Display().warning(f"rank_table: {text}"), **options)


@filter_errors("select_devices")
def select_devices(servers: Any, np: Any, chip: str | None = None, allow_partial_servers: bool = False, spread: bool = False) -> list:
    # imported when called, not when Ansible loads the file (docs/contracts.md, filter files)
    from ansible_collections.ascend.cluster.plugins.plugin_utils._rank.select import select_devices as _select

    return _select(servers, np, chip=chip, allow_partial_servers=allow_partial_servers, spread=spread)


@filter_errors("device_range")
def device_range(spec: Any, chip: str | None = None) -> list:
    # imported when called, not when Ansible loads the file (docs/contracts.md, filter files)
    from ansible_collections.ascend.cluster.plugins.plugin_utils._rank.device_spec import parse_device_range

    return parse_device_range(spec, chip=chip)


@filter_errors("npu_env")
def npu_env(spec: Any, chip: str | None = None, np: Any = None, available: Any = None) -> list:
    # imported when called, not when Ansible loads the file (docs/contracts.md, filter files)
    from ansible_collections.ascend.cluster.plugins.plugin_utils._rank.device_spec import parse_npu_env

    return parse_npu_env(spec, chip=chip, np=np, available=available)


def servers_from_facts(hosts, facts_key="ascend_npu"):
    # imported when called, not when Ansible loads the file (docs/contracts.md, filter files)
    from ansible_collections.ascend.cluster.plugins.plugin_utils._rank.servers import ServersError, servers_from_hostvars

    try:
        return servers_from_hostvars(hosts, facts_key)
    except ServersError as exc:
        raise AnsibleFilterError(str(exc)) from exc


@filter_errors("rank_entries")
def rank_entries(table: Any, server_id: str | None = None) -> list:
    """Flatten any supported rank table into rank-ordered entries (optionally one server's)."""
    # imported when called, not when Ansible loads the file (docs/contracts.md, filter files)
    from ansible_collections.ascend.cluster.plugins.plugin_utils._rank.layout import entries as _entries

    entries = _entries(table)
    if server_id is not None:
        entries = [e for e in entries if e["server_id"] == str(server_id)]
    return entries


@filter_errors("rank_layout")
def rank_layout(table: Any, servers: Any) -> dict:
    """Every host's slice of ``table`` (one parse), the rank size and rank 0's server."""
    # imported when called, not when Ansible loads the file (docs/contracts.md, filter files)
    from ansible_collections.ascend.cluster.plugins.plugin_utils._rank.layout import rank_layout as _rank_layout

    return _rank_layout(table, servers)


@filter_errors("missing_device_ips")
def missing_device_ips(servers: Any, version: Any = None, chip: str | None = None) -> dict:
    # imported when called, not when Ansible loads the file (docs/contracts.md, filter files)
    from ansible_collections.ascend.cluster.plugins.plugin_utils._rank.table import missing_device_ips as _missing_device_ips

    return _missing_device_ips(servers, version=version, chip=chip)


@filter_errors("missing_superpod_ids")
def missing_superpod_ids(servers: Any, version: Any = None, chip: str | None = None) -> list:
    # imported when called, not when Ansible loads the file (docs/contracts.md, filter files)
    from ansible_collections.ascend.cluster.plugins.plugin_utils._rank.table import missing_superpod_ids as _missing_superpod_ids

    return _missing_superpod_ids(servers, version=version, chip=chip)


# Every filter of this file, registered under its function's name (the name its YAML documentation has).
FILTERS = (
    rank_table,
    validate_rank_table,
    rank_plan,
    select_devices,
    device_range,
    npu_env,
    servers_from_facts,
    rank_entries,
    rank_layout,
    missing_device_ips,
    missing_superpod_ids,
)


class FilterModule:
    def filters(self) -> dict:
        return {function.__name__: function for function in FILTERS}
