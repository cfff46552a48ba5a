# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rank table as data (servers, devices, ranks) and the checks HCCL applies to it.

Both directions go through here: a table built from ``hccn_facts`` results and a table read
back from a file are turned into the same :class:`RankServer` list and checked by
:func:`check_cluster`, so a table we write always passes the checks we apply before launch.
Every check is O(number of devices): sets and dicts, one regular expression per IP.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Sequence

try:
    import netaddr
except ImportError:  # reported when an address needs it, like community.general does
    netaddr = None  # type: ignore[assignment]  # the optional-import idiom: None means not installed

from ansible_collections.ascend.cluster.plugins.module_utils._npu.chip import ChipProfile
from ansible_collections.ascend.cluster.plugins.plugin_utils._errors import ClusterSpecError
from ansible_collections.ascend.cluster.plugins.plugin_utils._rank.chip_rules import check_hccs_layout

VERSION_1_0 = "1.0"
VERSION_1_2 = "1.2"
TEMPLATE_2 = "template2"
VERSIONS = (VERSION_1_0, VERSION_1_2, TEMPLATE_2)

_OCTET = r"(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)"
# Plain dotted quads are by far the common case; matching them with one regular expression
# keeps validation of 65536 devices fast. Anything else is decided by netaddr.
_DOTTED_QUAD = re.compile(rf"{_OCTET}(?:\.{_OCTET}){{3}}\Z", re.ASCII)


def is_ip_address(text: str) -> bool:
    """True for an IPv4/IPv6 address netaddr accepts (strict: no leading zeros, no spaces)."""
    if _DOTTED_QUAD.match(text):
        return True
    if netaddr is None:
        raise ClusterSpecError(f"checking the address {text!r} needs the netaddr Python library on the controller: pip install netaddr")
    return bool(netaddr.valid_ipv4(text) or netaddr.valid_ipv6(text))


@dataclass(slots=True)
class RankDevice:
    """One device (one rank). ``device_ip`` is "" when the device reported none."""

    device_id: int
    device_ip: str = ""
    rank_id: int = -1
    super_device_id: str = ""


@dataclass(slots=True)
class RankServer:
    """One server taking part, with its devices in rank order."""

    server_id: str
    devices: list[RankDevice] = field(default_factory=list)
    host_ip: str = ""
    super_pod_id: str = ""


def device_label(server: RankServer, device: RankDevice) -> str:
    return f"server {server.server_id} device {device.device_id}"


SERVER_ID_MAX_LENGTH = 64  # HCCL: "string, at most 64 characters, globally unique"
# Addresses a device reports when it has none configured (netdetect reads 0.0.0.0 when unset).
_UNSET_ADDRESSES = frozenset(("0.0.0.0", "255.255.255.255", "::"))


def check_cluster(
    servers: Sequence[RankServer],
    version: str,
    profile: ChipProfile | None,
    allow_partial_servers: bool = False,
) -> list[tuple[RankServer, list[int]]]:
    """Raise ClusterSpecError naming the server/device for the first rule HCCL would reject.

    Device ids are range-checked when they are read (see ``_rank.chip_rules.device_id_of``).
    Every device without an IP is named in one message when the table needs IPs; when it does
    not, they are returned (``devices_without_ip``'s shape) for the caller to warn about.
    """
    if not servers:
        raise ClusterSpecError("no servers given: a rank table needs at least one server with devices")
    layout = _check_servers(servers)
    if version == VERSION_1_2:
        _check_super_pod(servers)
    missing = _check_device_ips(servers, device_ips_needed_for(servers, version))
    _check_ranks([device.rank_id for server in servers for device in server.devices])
    check_hccs_layout(profile, layout, allow_partial_servers)
    return missing


def device_ips_needed_for(servers: Sequence[RankServer], version: str) -> str:
    """Why HCCL needs every device's IP in this table ("" when it does not).

    HCCL needs them when more than one server takes part; for version 1.2 only between SuperPoDs
    (inside one, devices talk over HCCS).
    """
    if version == VERSION_1_2:
        return "a table spanning several super pods" if len({s.super_pod_id for s in servers}) > 1 else ""
    return "a multi-server table" if len(servers) > 1 else ""


def device_ranges(ids: Sequence[int]) -> str:
    """Sorted device ids with runs shortened: ``[0, 1, 2, 3, 5, 7, 8]`` -> ``"0-3, 5, 7-8"``."""
    runs: list[list[int]] = []
    for device_id in sorted(ids):
        if runs and device_id == runs[-1][1] + 1:
            runs[-1][1] = device_id
        else:
            runs.append([device_id, device_id])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


def devices_without_ip(servers: Sequence[RankServer]) -> list[tuple[RankServer, list[int]]]:
    """Each server that has devices without a device_ip, with their ids, in the servers' order."""
    missing = []
    for server in servers:
        ids = [device.device_id for device in server.devices if not device.device_ip]
        if ids:
            missing.append((server, ids))
    return missing


def describe_devices_without_ip(missing: Sequence[tuple[RankServer, list[int]]]) -> str:
    """``"server 10.0.0.1 devices 0-7, server 10.0.0.2 device 3 have no device_ip"``."""
    parts = [f"server {server.server_id} device{'s' if len(ids) > 1 else ''} {device_ranges(ids)}" for server, ids in missing]
    one = len(missing) == 1 and len(missing[0][1]) == 1
    return f"{', '.join(parts)} {'has' if one else 'have'} no device_ip"


def _check_servers(servers: Sequence[RankServer]) -> list[tuple[str, list[int]]]:
    """server_id present, short enough and unique; devices present and not repeated. Returns the layout."""
    server_ids: set[str] = set()
    layout = []
    for server in servers:
        if not isinstance(server.server_id, str) or not server.server_id:
            raise ClusterSpecError(f"a server has no server_id (got {server.server_id!r}); use the host's IP")
        if len(server.server_id) > SERVER_ID_MAX_LENGTH:
            raise ClusterSpecError(
                f"server_id {server.server_id!r} is longer than HCCL's {SERVER_ID_MAX_LENGTH} characters; use the host's IP"
            )
        if server.server_id in server_ids:
            raise ClusterSpecError(f"server_id {server.server_id} appears more than once; each server once")
        server_ids.add(server.server_id)
        if not server.devices:
            raise ClusterSpecError(f"server {server.server_id} has no devices; drop it or give its devices")
        ids = [device.device_id for device in server.devices]
        if len(set(ids)) != len(ids):
            duplicates = sorted({i for i in ids if ids.count(i) > 1})
            raise ClusterSpecError(f"server {server.server_id}: device_id {duplicates[0]} is listed more than once")
        layout.append((server.server_id, sorted(ids)))
    return layout


def _check_device_ips(servers: Sequence[RankServer], needed_for: str) -> list[tuple[RankServer, list[int]]]:
    """Every device_ip valid and unique in the cluster; present when ``needed_for`` says why.

    Returns the devices without an IP (only possible when none is needed)."""
    ip_owner: dict[str, tuple[RankServer, RankDevice]] = {}
    unset = False
    for server in servers:
        for device in server.devices:
            ip = device.device_ip
            if not ip:
                unset = True
                continue
            if not is_ip_address(ip) or ip in _UNSET_ADDRESSES:
                raise ClusterSpecError(f"{device_label(server, device)}: device_ip {ip!r} is not a valid device IP address")
            owner = ip_owner.get(ip)
            if owner is not None:
                raise ClusterSpecError(
                    f"{device_label(server, device)}: device_ip {ip} is already used by {device_label(*owner)}; "
                    f"every device needs its own IP"
                )
            ip_owner[ip] = (server, device)
    if not unset:  # the common case: no second pass
        return []
    missing = devices_without_ip(servers)
    if needed_for:
        raise ClusterSpecError(
            f"{describe_devices_without_ip(missing)}, which {needed_for} needs; give them IPs "
            f"(ansible-playbook ascend.cluster.prepare, or hccn_tool -i <device> -ip -s address ... netmask ...) "
            f"and gather facts again"
        )
    return missing


def _check_ranks(ranks: list[int]) -> None:
    """rank_id must be unique and exactly 0..N-1 (HCCL: 'must start from 0 or it is used repeatedly')."""
    count = len(ranks)
    seen = bytearray(count)
    for rank in ranks:
        if not 0 <= rank < count:
            raise ClusterSpecError(f"rank_id {rank} is outside 0..{count - 1}: rank ids must run 0..N-1 over all {count} devices")
        if seen[rank]:
            raise ClusterSpecError(f"rank_id {rank} is used more than once: rank ids must be unique")
        seen[rank] = 1


def _check_super_pod(servers: Sequence[RankServer]) -> None:
    """Version 1.2 (A3 SuperPoD): super_pod_id per server, servers of a pod listed together,
    a non-empty super_device_id unique in its pod, host_ip (optional) an IPv4 address."""
    super_ids: dict[tuple[str, str], str] = {}
    pods_seen: list[str] = []
    for server in servers:
        if server.host_ip and not _DOTTED_QUAD.match(server.host_ip):
            raise ClusterSpecError(f"server {server.server_id}: host_ip {server.host_ip!r} is not an IPv4 address")
        if not server.super_pod_id:
            raise ClusterSpecError(f"server {server.server_id}: version 1.2 needs super_pod_id (the SuperPoD it sits in)")
        if not pods_seen or pods_seen[-1] != server.super_pod_id:
            if server.super_pod_id in pods_seen:
                raise ClusterSpecError(
                    f"server {server.server_id}: the servers of super pod {server.super_pod_id} must be listed together, "
                    f"not mixed with other pods (HCCL requirement); order the servers by super pod"
                )
            pods_seen.append(server.super_pod_id)
        for device in server.devices:
            if not device.super_device_id:
                raise ClusterSpecError(
                    f"{device_label(server, device)}: version 1.2 needs a non-empty super_device_id (HCCL rejects an empty one)"
                )
            key = (server.super_pod_id, device.super_device_id)
            if key in super_ids:
                raise ClusterSpecError(
                    f"{device_label(server, device)}: super_device_id {device.super_device_id} is already used by "
                    f"{super_ids[key]} in super pod {server.super_pod_id}"
                )
            super_ids[key] = device_label(server, device)
