# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The cross-server device ping mesh: which device pings which, and what a lost ping means.

Every ping leaves through the sending NPU's own NIC (``hccn_tool -i N -ping -g address X``), so a
pair only makes sense inside one device subnet: with one subnet per device index (the usual 910B
plan) device N reaches device N of the other servers only; with one subnet for all devices it
reaches them all.

- ``sampled``: each device pings the same device of the next and of the previous server in the
  play's order (a ring: every server pair that HCCL's ring puts side by side, every device, two
  pings per device whatever the cluster's size).
- ``full``: each device pings every device of every other server in its subnet (n x (n - 1)
  pairs per device index: for checking a new fabric, not for 1000 servers).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping, Sequence
from typing import Any

from ansible_collections.ascend.cluster.plugins.plugin_utils._errors import ClusterSpecError

MODES = ("none", "sampled", "full")
RESULT_VAR = "_ascend_net_health_ping"  # what the net_health role registers the hccn_ping result as
HINT = "check the cables, switch ports and VLAN between them (the device IPs answer, the path does not)"


def _network(dev: Mapping[str, Any]) -> ipaddress.IPv4Network | None:
    try:
        return ipaddress.IPv4Network(f"{dev.get('device_ip')}/{dev.get('netmask')}", strict=False)
    except ValueError:
        return None


def ping_targets(servers: Sequence[tuple[str, Sequence[Any]]], host: str, mode: str) -> list[dict[str, Any]]:
    """The ``hccn_ping`` targets of ``host``: ``[{device_id, address, peer}]``.

    ``servers``: ``(host, devices)`` for every server of the play, in the play's order; a device is
    the ``ascend_npu`` facts' entry (``device_id``, ``device_ip``, ``netmask``). Devices without an IP
    are left out (the health report names them).
    """
    if mode not in MODES:
        raise ClusterSpecError(f"ping mesh mode {mode!r} is unknown: use none, sampled or full")
    names = [name for name, _devices in servers]
    if mode == "none" or host not in names:
        return []
    index = names.index(host)
    if mode == "sampled":
        peers = [names[(index + 1) % len(names)], names[(index - 1) % len(names)]]
        peers = [p for i, p in enumerate(peers) if p != host and p not in peers[:i]]
    else:
        peers = [p for p in names if p != host]
    wanted = set(peers) | {host}
    devices = {name: [d for d in devs or () if isinstance(d, Mapping) and d.get("device_ip")] for name, devs in servers if name in wanted}
    targets = []
    for dev in devices[host]:
        network = _network(dev)
        if network is None:
            continue
        for peer in peers:
            for other in devices[peer]:
                if mode == "sampled" and other.get("device_id") != dev.get("device_id"):
                    continue
                if ipaddress.IPv4Address(other["device_ip"]) in network:
                    targets.append(
                        {
                            "device_id": dev["device_id"],
                            "address": other["device_ip"],
                            "peer": f"{peer} device {other.get('device_id')}",
                        }
                    )
    return targets


def lost_pings(item: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The ``hccn_ping`` results of one host's variables that lost packets (none when it did not ping)."""
    result = item.get(RESULT_VAR)
    if not isinstance(result, Mapping) or result.get("skipped"):
        return []
    return [r for r in result.get("results") or () if isinstance(r, Mapping) and not r.get("ok")]


def ping_problem(host: str, lost: Mapping[str, Any]) -> str:
    """The report's line for one pair that lost packets."""
    return (
        f"{host} device {lost.get('device_id')} -> {lost.get('peer') or lost.get('address')} ({lost.get('address')}): "
        f"{lost.get('received')}/{lost.get('sent')} pings answered - {HINT}"
    )
