# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Writing and reading the three rank table layouts (reference section 3).

- ``1.0``: ``server_list[{server_id, device[{device_id, device_ip, rank_id}], host_nic_ip}]``;
- ``1.2``: A3 SuperPoD, adds ``host_ip``, ``super_device_id`` and ``super_pod_list``;
- ``template2``: the old ``group_list`` / ``instance_list`` layout (MindSpore 0.x, seed 003).

Every value written is a string and every list is in rank order. Reading turns any of the
three back into ``RankServer`` objects for ``check_cluster``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ansible_collections.ascend.cluster.plugins.module_utils._npu.chip import ChipProfile
from ansible_collections.ascend.cluster.plugins.plugin_utils._errors import ClusterSpecError
from ansible_collections.ascend.cluster.plugins.plugin_utils._rank.chip_rules import device_id_of, is_decimal
from ansible_collections.ascend.cluster.plugins.plugin_utils._rank.model import (
    TEMPLATE_2,
    VERSION_1_0,
    VERSION_1_2,
    RankDevice,
    RankServer,
)

TEMPLATE2_DEFAULTS = {
    "board_id": "0x0000",
    "chip_info": "910",
    "deploy_mode": "lab",
    "group_name": "",
    "para_plane_nic_location": "device",
}


# --------------------------------------------------------------------------- writing


def render(servers: Sequence[RankServer], version: str, status: str, template2: Mapping[str, Any]) -> dict:
    if version == TEMPLATE_2:
        return _render_template2(servers, status, template2)
    table: dict[str, Any] = {"version": version, "server_count": str(len(servers))}
    if version == VERSION_1_2:
        table["server_list"] = [_render_server_1_2(server) for server in servers]
        table["super_pod_list"] = _render_super_pods(servers)
    else:
        table["server_list"] = [_render_server_1_0(server) for server in servers]
    table["status"] = status
    return table


def _render_device(device: RankDevice) -> dict[str, str]:
    entry = {"device_id": str(device.device_id)}
    if device.device_ip:  # only a single server (or SuperPoD) may lack IPs (checked before)
        entry["device_ip"] = device.device_ip
    return entry


def _render_server_1_0(server: RankServer) -> dict[str, Any]:
    devices = []
    for device in server.devices:
        entry = _render_device(device)
        entry["rank_id"] = str(device.rank_id)
        devices.append(entry)
    return {"server_id": server.server_id, "device": devices, "host_nic_ip": "reserve"}


def _render_server_1_2(server: RankServer) -> dict[str, Any]:
    devices = []
    for device in server.devices:
        entry = _render_device(device)
        entry["super_device_id"] = device.super_device_id
        entry["rank_id"] = str(device.rank_id)
        devices.append(entry)
    rendered: dict[str, Any] = {"server_id": server.server_id}
    if server.host_ip:  # optional in 1.2; HCCL needs it for operator retry
        rendered["host_ip"] = server.host_ip
    rendered["device"] = devices
    return rendered


def _render_super_pods(servers: Sequence[RankServer]) -> list[dict[str, Any]]:
    pods: dict[str, list[dict[str, str]]] = {}
    for server in servers:  # pods in order of their first rank
        pods.setdefault(server.super_pod_id, []).append({"server_id": server.server_id})
    return [{"super_pod_id": pod_id, "server_list": members} for pod_id, members in pods.items()]


def default_nic_names(servers: Sequence[RankServer]) -> list[str]:
    """``eth<N>`` for every device id in use: device N's RoCE port is ethN (hccn_tool's Iface)."""
    ids = sorted({device.device_id for server in servers for device in server.devices})
    return [f"eth{device_id}" for device_id in ids]


def _render_template2(servers: Sequence[RankServer], status: str, options: Mapping[str, Any]) -> dict:
    opts = {**TEMPLATE2_DEFAULTS, **{k: v for k, v in options.items() if v is not None}}
    nic_names = options.get("para_plane_nic_name")
    nic_names = default_nic_names(servers) if nic_names is None else [str(name) for name in nic_names]
    instances = [
        {"devices": [_render_device(device)], "rank_id": str(device.rank_id), "server_id": server.server_id}
        for server in servers
        for device in server.devices
    ]
    group = {
        "device_num": str(len(instances)),
        "server_num": str(len(servers)),
        "group_name": str(opts["group_name"]),
        "instance_count": str(len(instances)),
        "instance_list": instances,
    }
    return {
        "board_id": str(opts["board_id"]),
        "chip_info": str(opts["chip_info"]),
        "deploy_mode": str(opts["deploy_mode"]),
        "group_count": "1",
        "group_list": [group],
        "para_plane_nic_location": str(opts["para_plane_nic_location"]),
        "para_plane_nic_name": nic_names,
        "para_plane_nic_num": str(len(nic_names)),
        "status": status,
    }


# --------------------------------------------------------------------------- reading


def _string(entry: Mapping[str, Any], key: str, where: str, required: bool = True) -> str:
    value = entry.get(key) if isinstance(entry, Mapping) else None
    if value is None and not required:
        return ""
    if not isinstance(value, str):
        hint = " (merge_hccl.py writes integers; HCCL wants strings)" if isinstance(value, int) else ""
        raise ClusterSpecError(f"{where}: {key} must be a string, got {value!r}{hint}")
    return value


def _number(entry: Mapping[str, Any], key: str, where: str) -> int:
    text = _string(entry, key, where)
    if not is_decimal(text):
        raise ClusterSpecError(f"{where}: {key} {text!r} is not a decimal number")
    return int(text)


def _list(entry: Mapping[str, Any], key: str, where: str) -> list:
    value = entry.get(key) if isinstance(entry, Mapping) else None
    if not isinstance(value, list):
        raise ClusterSpecError(f"{where}: {key} must be a list, got {value!r}")
    return value


def _read_device(entry: Any, where: str, profile: ChipProfile | None, with_rank: bool = True) -> RankDevice:
    if not isinstance(entry, Mapping):
        raise ClusterSpecError(f"{where}: a device entry must be a mapping, got {entry!r}")
    raw_id = _string(entry, "device_id", where)
    device = RankDevice(device_id_of(raw_id, where, profile), _string(entry, "device_ip", where, required=False))
    if with_rank:
        device.rank_id = _number(entry, "rank_id", f"{where} device {raw_id}")
    return device


def parse(table: Mapping[str, Any], profile: ChipProfile | None) -> tuple[str, list[RankServer]]:
    """Read a table of any known layout: ``(version, servers)``; structural errors raise."""
    if not isinstance(table, Mapping):
        raise ClusterSpecError(f"a rank table must be a mapping (parsed JSON), got {type(table).__name__}")
    if "group_list" in table:
        return TEMPLATE_2, _parse_template2(table, profile)
    version = table.get("version")
    if version not in (VERSION_1_0, VERSION_1_2):
        raise ClusterSpecError(f"rank table version {version!r} is not known: this collection reads 1.0, 1.2 and template 2 (group_list)")
    server_list = _list(table, "server_list", "rank table")
    if _number(table, "server_count", "rank table") != len(server_list):
        raise ClusterSpecError(f"server_count is {table['server_count']} but server_list has {len(server_list)} entries")
    servers = []
    for index, entry in enumerate(server_list):
        where = f"server_list[{index}]"
        server = RankServer(_string(entry, "server_id", where))
        where = f"server {server.server_id}"
        for device_entry in _list(entry, "device", where):
            device = _read_device(device_entry, where, profile)
            if version == VERSION_1_2:
                device.super_device_id = _string(device_entry, "super_device_id", f"{where} device {device.device_id}", False)
            server.devices.append(device)
        if version == VERSION_1_2:
            server.host_ip = _string(entry, "host_ip", where, required=False)
        servers.append(server)
    if version == VERSION_1_2:
        _read_super_pods(table, servers)
    return version, servers


def _read_super_pods(table: Mapping[str, Any], servers: list[RankServer]) -> None:
    by_id = {server.server_id: server for server in servers}
    for pod in _list(table, "super_pod_list", "rank table"):
        pod_id = _string(pod, "super_pod_id", "super_pod_list entry")
        for member in _list(pod, "server_list", f"super pod {pod_id}"):
            server_id = _string(member, "server_id", f"super pod {pod_id}")
            if server_id not in by_id:
                raise ClusterSpecError(f"super pod {pod_id} lists server {server_id}, which is not in server_list")
            by_id[server_id].super_pod_id = pod_id


def _parse_template2(table: Mapping[str, Any], profile: ChipProfile | None) -> list[RankServer]:
    """Template 2 as MindSpore wrote it (``device_num``, ``server_num``, ``rank_id`` per instance)
    or as the CANN manual shows it (``device_count``, ``pod_name``, ranks in list order)."""
    groups = _list(table, "group_list", "rank table")
    if _number(table, "group_count", "rank table") != len(groups):
        raise ClusterSpecError(f"group_count is {table['group_count']} but group_list has {len(groups)} entries")
    servers: dict[str, RankServer] = {}
    position = 0
    for index, group in enumerate(groups):
        where = f"group_list[{index}]"
        instances = _list(group, "instance_list", where)
        for instance in instances:
            server_id = _string(instance, "server_id", f"{where} instance")
            at = f"server {server_id}"
            devices = _list(instance, "devices", at)
            if len(devices) != 1:
                raise ClusterSpecError(f"{at}: an instance holds exactly one device, got {len(devices)}")
            device = _read_device(devices[0], at, profile, with_rank=False)
            has_rank = isinstance(instance, Mapping) and "rank_id" in instance
            device.rank_id = _number(instance, "rank_id", f"{at} device {device.device_id}") if has_rank else position
            position += 1
            servers.setdefault(server_id, RankServer(server_id)).devices.append(device)
        _check_group_counts(group, where, instances)
    return list(servers.values())


def _check_group_counts(group: Mapping[str, Any], where: str, instances: list) -> None:
    counted = [key for key in ("device_num", "device_count") if key in group]
    if not counted:
        raise ClusterSpecError(f"{where}: device_num (or device_count) is missing")
    for key in counted + ["instance_count"]:
        if _number(group, key, where) != len(instances):
            raise ClusterSpecError(f"{where}: {key} is {group[key]} but instance_list has {len(instances)} entries")
    if "server_num" in group:
        listed = {instance.get("server_id") for instance in instances}
        if _number(group, "server_num", where) != len(listed):
            raise ClusterSpecError(f"{where}: server_num is {group['server_num']} but {len(listed)} servers are listed")
