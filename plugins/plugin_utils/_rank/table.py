# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Build an HCCL rank table from the devices servers report, and validate an existing one.

``build_rank_table`` takes the list a playbook gathers from ``hccn_facts``::

    [{"server_id": "10.0.0.1", "devices": [{"device_id": 0, "device_ip": "192.168.100.101"}, ...]}, ...]

(``host_ip``/``super_pod_id`` per server and ``super_device_id`` per device for version 1.2),
numbers the ranks, checks everything HCCL checks (see ``_rank.model.check_cluster``) and
renders the requested layout. ``validate_rank_table`` reads a table back and runs the same checks.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Callable

from ansible_collections.ascend.cluster.plugins.module_utils._npu.chip import ChipProfile
from ansible_collections.ascend.cluster.plugins.plugin_utils._errors import ClusterSpecError
from ansible_collections.ascend.cluster.plugins.plugin_utils._rank.chip_rules import device_id_of, resolve_chip
from ansible_collections.ascend.cluster.plugins.plugin_utils._rank.formats import parse, render
from ansible_collections.ascend.cluster.plugins.plugin_utils._rank.model import (
    TEMPLATE_2,
    VERSION_1_2,
    VERSIONS,
    RankDevice,
    RankServer,
    check_cluster,
    describe_devices_without_ip,
    device_ips_needed_for,
    device_ranges,
)

ORDERS = ("server_id", "given")
STATUSES = ("completed", "initializing")


def resolve_version(version: Any, profile: ChipProfile | None) -> str:
    """The table version to write/expect; the chip's own version when none is given.

    Handing a chip a table of another version is a known cause of ``Config_Error_Ranktable``.
    """
    if version is None or version == "":
        return profile.rank_table_version if profile else "1.0"
    text = str(version)  # YAML/Jinja turn an unquoted 1.0 into a float
    if text not in VERSIONS:
        raise ClusterSpecError(f"version {version!r} is not known: use one of {', '.join(VERSIONS)}")
    if profile is not None:
        allowed = {profile.rank_table_version} | ({TEMPLATE_2} if profile.hccs_rings else set())
        if text not in allowed:
            raise ClusterSpecError(
                f"{profile.name} reads rank table version {profile.rank_table_version}, not {text}; "
                f"a table of the wrong version fails with Config_Error_Ranktable"
            )
    return text


def _text(value: Any, what: str, where: str) -> str:
    if isinstance(value, str):  # the common case first: this runs for every device
        return value
    if value is None:
        return ""
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise ClusterSpecError(f"{where}: {what} must be a string, got {value!r}")
    return str(value)


def read_servers(servers: Any, profile: ChipProfile | None, order: str = "server_id", by_super_pod: bool = False) -> list[RankServer]:
    """Turn the input list of server mappings into ``RankServer`` objects with rank ids assigned.

    Ranks run 0..N-1 over the servers in ``order`` (``server_id``: dictionary order of server_id,
    as MindSpore documents; ``given``: the caller's order), devices ascending within a server.
    With ``by_super_pod`` the servers of one SuperPoD are then kept together (HCCL requires it
    for version 1.2), pods in the order their first server appears.
    """
    if order not in ORDERS:
        raise ClusterSpecError(f"order {order!r} is not known: use 'server_id' or 'given'")
    if isinstance(servers, (str, bytes, Mapping)) or not isinstance(servers, Sequence):
        raise ClusterSpecError(f"the input must be a list of servers ({{server_id, devices}}), got {type(servers).__name__}")
    result = []
    for index, entry in enumerate(servers):
        if not isinstance(entry, Mapping):
            raise ClusterSpecError(f"server #{index} must be a mapping with server_id and devices, got {entry!r}")
        server_id = _text(entry.get("server_id"), "server_id", f"server #{index}")
        where = f"server {server_id or '#%d' % index}"
        devices = entry.get("devices")
        if devices is None or isinstance(devices, (str, Mapping)) or not isinstance(devices, Sequence):
            raise ClusterSpecError(f"{where}: devices must be a list of {{device_id, device_ip}}, got {devices!r}")
        server = RankServer(
            server_id,
            host_ip=_text(entry.get("host_ip"), "host_ip", where),
            super_pod_id=_text(entry.get("super_pod_id"), "super_pod_id", where),
        )
        for device in devices:
            if not isinstance(device, dict) and not isinstance(device, Mapping):
                raise ClusterSpecError(f"{where}: a device must be a mapping with device_id, got {device!r}")
            device_id = device_id_of(device.get("device_id"), where, profile)
            device_ip = device.get("device_ip")
            if not isinstance(device_ip, str):  # labels are built only when needed: this loop is hot
                device_ip = _text(device_ip, "device_ip", f"{where} device {device_id}")
            super_device_id = device.get("super_device_id")
            if not isinstance(super_device_id, str):
                super_device_id = _text(super_device_id, "super_device_id", f"{where} device {device_id}")
            server.devices.append(RankDevice(device_id, device_ip, -1, super_device_id))
        server.devices.sort(key=lambda d: d.device_id)
        result.append(server)
    if order == "server_id":
        result.sort(key=lambda s: s.server_id)
    if by_super_pod:
        first_seen: dict[str, int] = {}
        for index, server in enumerate(result):
            first_seen.setdefault(server.super_pod_id, index)
        result.sort(key=lambda s: first_seen[s.super_pod_id])  # stable: order kept inside a pod
    rank = 0
    for server in result:
        for device in server.devices:
            device.rank_id = rank
            rank += 1
    return result


def build_rank_table(
    servers: Any,
    version: Any = None,
    order: str = "server_id",
    status: str = "completed",
    chip: str | None = None,
    allow_partial_servers: bool = False,
    warn: Callable[[str], None] | None = None,
    **template2: Any,
) -> dict:
    """The rank table for exactly the devices given, as a dict of strings (see module docstring).

    ``template2`` takes ``board_id``, ``chip_info``, ``deploy_mode``, ``group_name``,
    ``para_plane_nic_location`` and ``para_plane_nic_name`` (used by version ``template2`` only).
    ``warn`` is told about devices without an IP in a table that HCCL accepts without them (one
    server; for version 1.2 one super pod).
    """
    unknown = set(template2) - {
        "board_id",
        "chip_info",
        "deploy_mode",
        "group_name",
        "para_plane_nic_location",
        "para_plane_nic_name",
    }
    if unknown:
        raise ClusterSpecError(f"unknown option(s) {', '.join(sorted(unknown))}")
    if status not in STATUSES:
        raise ClusterSpecError(f"status {status!r} is not known: use 'completed' or 'initializing'")
    profile = resolve_chip(chip)
    version = resolve_version(version, profile)
    rank_servers = read_servers(servers, profile, order, by_super_pod=version == VERSION_1_2)
    missing = check_cluster(rank_servers, version, profile, allow_partial_servers)
    if missing and warn is not None:
        warn(
            f"{describe_devices_without_ip(missing)}: HCCL accepts that only while the job stays inside one server "
            f"(version 1.2: one super pod); give them IPs (ansible-playbook ascend.cluster.prepare) before it spans more"
        )
    return render(rank_servers, version, status, template2)


def missing_device_ips(servers: Any, version: Any = None, chip: str | None = None) -> dict:
    """The devices without an IP among ``servers`` (``build_rank_table``'s input), and whether the
    table they would make needs them: ``{required, device_count, servers: [{server_id, host, device_ids, label}]}``.

    ``host`` is the entry's ``host`` (the inventory name ``servers_from_facts`` adds) or None.
    """
    profile = resolve_chip(chip)
    version = resolve_version(version, profile)
    rank_servers = read_servers(servers, profile, order="given")  # the input's order: entries and servers pair up
    found = []
    for server, entry in zip(rank_servers, servers):
        ids = [device.device_id for device in server.devices if not device.device_ip]
        if not ids:
            continue
        host = entry.get("host")
        where = f"{host} ({server.server_id})" if host else f"server {server.server_id}"
        found.append(
            {
                "server_id": server.server_id,
                "host": host,
                "device_ids": ids,
                "label": f"{where} device{'s' if len(ids) > 1 else ''} {device_ranges(ids)}",
            }
        )
    return {
        "required": bool(device_ips_needed_for(rank_servers, version)),
        "device_count": sum(len(entry["device_ids"]) for entry in found),
        "servers": found,
    }


def missing_superpod_ids(servers: Any, version: Any = None, chip: str | None = None) -> list[str]:
    """The servers whose ids a version 1.2 (A3 SuperPoD) table needs are not given; [] for other versions.

    A 1.2 table needs each server's ``super_pod_id`` and each device's ``super_device_id``, which
    ``hccn_facts`` cannot read: the inventory gives them. Each server is named by its ``host`` (the
    inventory name ``servers_from_facts`` adds), else its ``server_id``.
    """
    if resolve_version(version, resolve_chip(chip)) != VERSION_1_2:
        return []
    if isinstance(servers, (str, Mapping)) or not isinstance(servers, Sequence):
        raise ClusterSpecError("the input must be the list of servers (servers_from_facts / select_devices)")
    missing = []
    for index, entry in enumerate(servers):
        if not isinstance(entry, Mapping):
            raise ClusterSpecError(f"server entry {index} is not a mapping: {entry!r}")
        devices = entry.get("devices") or []
        if entry.get("super_pod_id") is None or any(not isinstance(d, Mapping) or d.get("super_device_id") is None for d in devices):
            missing.append(str(entry.get("host") or entry.get("server_id") or f"entry {index}"))
    return missing


def validate_rank_table(
    table: Any,
    chip: str | None = None,
    allow_partial_servers: bool = False,
    version: Any = None,
) -> dict:
    """Return ``table`` (parsed if given as JSON text) if HCCL would accept it, else raise.

    Checks: a known version (and the chip's, when ``chip`` or ``version`` is given); status
    ``completed``; server_count matching server_list; unique server_id; rank_id strings, unique,
    exactly 0..N-1; device_id in the chip's range; device_ip present (and unique, valid) when more
    than one server takes part; super_device_id for 1.2; the 910A ring rules with ``chip=910A``.
    """
    if isinstance(table, (str, bytes)):
        try:
            table = json.loads(table)
        except ValueError as exc:
            raise ClusterSpecError(f"the rank table is not valid JSON: {exc}") from None
    profile = resolve_chip(chip)
    found, servers = parse(table, profile)
    if version is not None:
        expected = resolve_version(version, profile)
        if found != expected:
            raise ClusterSpecError(f"the table is version {found} but {expected} is expected here")
    elif profile is not None:
        resolve_version(found, profile)  # raises when this chip does not read that version
    if table.get("status") != "completed":
        raise ClusterSpecError(f"status is {table.get('status')!r}, not 'completed': the table is still being written or is damaged")
    check_cluster(servers, found, profile, allow_partial_servers)
    return table
