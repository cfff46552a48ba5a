# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rules on device IP settings: one owner for the host check and the controller's plan check.

Why the standard library's ``ipaddress`` and not netaddr: this runs on the TARGET host, where
netaddr is usually not installed (it is a controller-side dependency). ``ipaddress`` ships with
every Python 3. The controller-side plan check (``plugin_utils/_net/ip_plan.py``) sees the whole
cluster (an address planned twice, the smp layout's subnets) and takes every per-device rule from
here: :func:`check_device` for one device's address, netmask, gateway and netdetect target,
:func:`normalize_netmask` for a netmask in any of its forms, :data:`RESERVED_NETWORK`; the
``hccn_config`` module runs the same checks on each host before it sets anything.

The rules follow what ``hccn_tool`` refuses (reference section 1): 192.168.1.0/24 is reserved
for the device's internal vNIC, network and broadcast addresses are invalid, the gateway must
be inside the device subnet, two devices may not share an address.

Runs on target hosts: Python 3.8+, stdlib only.
"""

from __future__ import annotations

import ipaddress

RESERVED_NETWORK = ipaddress.IPv4Network("192.168.1.0/24")
FIELDS = ("address", "netmask", "gateway", "netdetect")
OPTIONAL_FIELDS = ("gateway", "netdetect")


class IpCheckError(ValueError):
    """One or more wanted values are wrong; ``problems`` lists every one of them."""

    def __init__(self, problems: list) -> None:
        self.problems = problems
        super().__init__("; ".join(problems))


def _ipv4(value: object, what: str) -> ipaddress.IPv4Address:
    text = "" if value is None else str(value).strip()
    try:
        return ipaddress.IPv4Address(text)
    except ValueError:
        raise ValueError("%s %r is not an IPv4 address (write it as a.b.c.d)" % (what, value)) from None


def _netmask_network(value: object) -> ipaddress.IPv4Network:
    text = "" if value is None else str(value).strip().lstrip("/")
    try:
        network = ipaddress.IPv4Network("0.0.0.0/%s" % text)
        if "." in text and network.netmask != ipaddress.IPv4Address(text):
            raise ValueError(text)
    except ValueError:
        raise ValueError("netmask %r is not a netmask (use 255.255.255.0 or a prefix length such as 24)" % (value,)) from None
    return network


def normalize_netmask(value: object) -> str:
    """Dotted netmask for ``255.255.255.0``, ``24`` or ``/24``; ValueError when it is not a netmask.

    A host mask (``0.0.0.255``, which ``ipaddress`` would read as /24) is not a netmask.
    """
    return str(_netmask_network(value).netmask)


def netmask_prefix(value: object) -> int:
    """The prefix length of a netmask in any form :func:`normalize_netmask` reads (``255.255.255.0`` -> 24)."""
    return _netmask_network(value).prefixlen


def unicast_problem(addr: object) -> str | None:
    """Why ``addr`` cannot be a device address, gateway or netdetect target; None when it can.

    The one set of rules for the controller's plan check (``plugin_utils/_net/ip_plan.py``, netaddr
    addresses) and this host check (``ipaddress``): ``addr`` is anything ``int()`` turns into the
    32-bit address, or dotted text.
    """
    value = int(ipaddress.IPv4Address(addr)) if isinstance(addr, str) else int(addr)  # type: ignore[call-overload]
    if value >> 24 == 0:
        return "is in 0.0.0.0/8 (not a usable address)"
    if value >> 24 == 127:
        return "is a loopback address"
    if value == 0xFFFFFFFF:
        return "is the broadcast address"
    if value >> 28 == 0xE:
        return "is a multicast address"
    if value >> 28 == 0xF:
        return "is in the reserved range 240.0.0.0/4"
    return None


def check_device(entry: dict, where: str | None = None) -> tuple:
    """Normalize one wanted device ``{device_id, address, netmask, gateway, netdetect}``.

    Returns ``(normalized entry, problems)``; gateway/netdetect ``""`` mean "leave as is". Each problem
    starts with ``where`` (default ``device N``; the plan check names the host too). An address or a
    netmask that cannot be read is each a problem, and then nothing else is checked (no ``address``
    in the normalized entry).
    """
    where = where or "device %s" % entry.get("device_id")
    out = {"device_id": entry.get("device_id")}
    problems: list = []
    address = netmask = None
    try:
        address = _ipv4(entry.get("address"), "address")
    except ValueError as exc:
        problems.append("%s: %s" % (where, exc))
    try:
        netmask = normalize_netmask(entry.get("netmask"))
    except ValueError as exc:
        problems.append("%s: %s" % (where, exc))
    if address is None or netmask is None:
        return out, problems
    iface = ipaddress.IPv4Interface("%s/%s" % (address, netmask))
    net = iface.network
    out.update(address=str(address), netmask=netmask, gateway="", netdetect="")
    bad = unicast_problem(address)
    if bad:
        problems.append("%s: address %s %s" % (where, address, bad))
    if address in RESERVED_NETWORK:
        problems.append(
            "%s: address %s is in %s, reserved for the device's internal vNIC; pick another subnet" % (where, address, RESERVED_NETWORK)
        )
    if net.prefixlen > 30:
        problems.append(
            "%s: netmask %s (/%d) leaves no room for a device and a gateway; use /30 or wider" % (where, netmask, net.prefixlen)
        )
    elif address in (net.network_address, net.broadcast_address):
        kind = "network" if address == net.network_address else "broadcast"
        problems.append("%s: address %s is the %s address of %s; pick a host address" % (where, address, kind, net))
    for field in OPTIONAL_FIELDS:
        raw = entry.get(field)
        if raw is None or str(raw).strip() == "":
            continue
        try:
            value = _ipv4(raw, field)
        except ValueError as exc:
            problems.append("%s: %s" % (where, exc))
            continue
        out[field] = str(value)
        problems.extend(_check_target(where, field, value, address, net))
    return out, problems


def _check_target(where: str, field: str, value: ipaddress.IPv4Address, address: ipaddress.IPv4Address, net: ipaddress.IPv4Network) -> list:
    problems = []
    if value.is_unspecified:
        return ["%s: %s 0.0.0.0 is not an address; leave %s empty to keep the device's value" % (where, field, field)]
    bad = unicast_problem(value)
    if bad:
        problems.append("%s: %s %s %s" % (where, field, value, bad))
    if value == address:
        problems.append("%s: %s %s is the device's own address" % (where, field, value))
    if net.prefixlen <= 30 and value in (net.network_address, net.broadcast_address) and not bad:
        kind = "network" if value == net.network_address else "broadcast"
        problems.append("%s: %s %s is the %s address of %s" % (where, field, value, kind, net))
    if field == "gateway" and value not in net:
        problems.append(
            "%s: gateway %s is outside the device subnet %s (address %s); hccn_tool refuses it — "
            "use a gateway inside %s" % (where, value, net, address, net)
        )
    return problems


def check_devices(entries: list, max_device_id: int) -> list:
    """Normalize every wanted device of this host; IpCheckError listing all problems if any."""
    problems: list = []
    normalized = []
    seen_ids: set = set()
    owners: dict = {}
    for entry in entries:
        device = entry.get("device_id")
        if not isinstance(device, int) or isinstance(device, bool) or not 0 <= device <= max_device_id:
            problems.append("device_id %r is out of range: physical device ids go from 0 to %d" % (device, max_device_id))
            continue
        if device in seen_ids:
            problems.append("device %d is listed more than once" % device)
            continue
        seen_ids.add(device)
        wanted, found = check_device(entry)
        problems.extend(found)
        normalized.append(wanted)
        if "address" in wanted:
            owners.setdefault(wanted["address"], []).append(device)
    for address, devices in sorted(owners.items()):
        if len(devices) > 1:
            problems.append(
                "address %s is wanted on devices %s; every device needs its own address" % (address, ", ".join(str(d) for d in devices))
            )
    for wanted in normalized:
        gateway = wanted.get("gateway")
        if gateway and gateway in owners:
            problems.append(
                "device %d: gateway %s is the address of device %s; the gateway is the switch/router side"
                % (wanted["device_id"], gateway, owners[gateway][0])
            )
    if problems:
        raise IpCheckError(problems)
    return sorted(normalized, key=lambda w: w["device_id"])
