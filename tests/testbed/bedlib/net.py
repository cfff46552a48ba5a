"""Network plumbing of a bed: guard route, namespaces, bridges, veths, link cuts.

Topology (``P`` = prefix)::

    root netns:   guard route "unreachable 198.18.0.0/15", bridge P-m 198.18.X.1/24
                  P-h1m ... P-hNm          (management veths, bridge ports)
    P-hN netns:   mgmt0 198.18.X.(10+N)/24, eth0..eth7 (no address until hccn_tool sets one)
    P-fab netns:  bridge fab0 with ports h1e0..hNe7 (peers of each host's eth0..eth7)
"""

from __future__ import annotations

import ipaddress
import json
from pathlib import Path

from .layout import FABRIC_BRIDGE, GUARD_NET, MGMT_IFACE, MGMT_SUPERNET, Layout
from .run import BedError, in_netns, ip_batch, run

GUARD_ROUTE = ["unreachable", str(GUARD_NET)]

# Inside every bed namespace: no forwarding, no IPv6 chatter. Hosts also answer ARP only on
# the NIC that owns the address, so a cut ethK cannot be bypassed through a sibling NIC, and
# skip routes whose NIC lost its carrier: with every device in one subnet (AMP) the kernel sends
# all replies through the first connected route, and if that is the cut ethK every device of the
# host would look unreachable instead of just the cut one.
FABRIC_SYSCTLS = [
    "net.ipv4.ip_forward=0",
    "net.ipv4.conf.all.forwarding=0",
    "net.ipv6.conf.all.disable_ipv6=1",
    "net.ipv6.conf.default.disable_ipv6=1",
]
HOST_SYSCTLS = FABRIC_SYSCTLS + [
    "net.ipv4.conf.all.arp_ignore=1",
    "net.ipv4.conf.all.arp_announce=2",
    "net.ipv4.conf.all.ignore_routes_with_linkdown=1",
]


def guard_route_present() -> bool:
    out = run(["ip", "-4", "route", "show", "table", "main", "exact", str(GUARD_NET)]).stdout
    return any(line.split()[:2] == GUARD_ROUTE for line in out.splitlines())


def ensure_guard_route() -> None:
    """Add ``unreachable 198.18.0.0/15`` to the root namespace (never removed by the bed)."""
    if guard_route_present():
        return
    other = run(["ip", "-4", "route", "show", "table", "main", "exact", str(GUARD_NET)]).stdout.strip()
    if other:
        raise BedError(
            f"the root namespace already routes {GUARD_NET} ({other}); the bed needs that range "
            "unreachable from this machine: remove that route first"
        )
    run(["ip", "-4", "route", "add", *GUARD_ROUTE])


def used_mgmt_indexes() -> set:
    """Third octets of the 198.18.X.0/24 networks already on links of the root namespace."""
    data = json.loads(run(["ip", "-4", "-j", "addr", "show"]).stdout or "[]")
    used = set()
    for link in data:
        for addr in link.get("addr_info", []):
            ip = ipaddress.ip_address(addr["local"])
            if ip in MGMT_SUPERNET:
                used.add(int(str(ip).split(".")[2]))
    return used


def free_mgmt_index() -> int:
    used = used_mgmt_indexes()
    for index in range(256):
        if index not in used:
            return index
    raise BedError("every 198.18.X.0/24 management network is in use: bring some beds down")


def bed_netns(prefix: str) -> list[str]:
    """Network namespaces of bed ``prefix`` (found by their unique ``prefix-`` name)."""
    data = json.loads(run(["ip", "-j", "netns", "list"]).stdout or "[]")
    return sorted(ns["name"] for ns in data if ns["name"].startswith(f"{prefix}-"))


def bed_links(prefix: str) -> list[str]:
    """Links of bed ``prefix`` in the root namespace (bridge and management veths)."""
    data = json.loads(run(["ip", "-j", "link", "show"]).stdout or "[]")
    return sorted(link["ifname"] for link in data if link["ifname"].startswith(f"{prefix}-"))


def _disable_ipv6_on_root_link(name: str) -> None:
    Path(f"/proc/sys/net/ipv6/conf/{name}/disable_ipv6").write_text("1\n")
    Path(f"/proc/sys/net/ipv4/conf/{name}/forwarding").write_text("0\n")


def create(layout: Layout) -> None:
    """Make all namespaces and links of ``layout`` (call :func:`ensure_guard_route` first)."""
    if not guard_route_present():
        raise BedError("refusing to build a bed without the guard route unreachable 198.18.0.0/15")
    hosts = layout.host_names
    all_netns = [layout.host_netns(h) for h in hosts] + [layout.fabric_netns]
    ip_batch(f"netns add {ns}" for ns in all_netns)
    for ns in all_netns:
        in_netns(ns, ["sysctl", "-q", "-w", *(HOST_SYSCTLS if ns != layout.fabric_netns else FABRIC_SYSCTLS)])

    bridge = layout.mgmt_bridge
    root = [f"link add {bridge} type bridge"]
    root += [f"link add {layout.mgmt_veth(h)} type veth peer name {MGMT_IFACE} netns {layout.host_netns(h)}" for h in hosts]
    ip_batch(root)
    for name in [bridge] + [layout.mgmt_veth(h) for h in hosts]:
        _disable_ipv6_on_root_link(name)
    root = [f"addr add {layout.mgmt_gateway}/{layout.mgmt_network.prefixlen} dev {bridge}", f"link set {bridge} up"]
    root += [f"link set {layout.mgmt_veth(h)} master {bridge} up" for h in hosts]
    ip_batch(root)

    fabric = [f"link add {FABRIC_BRIDGE} type bridge", f"link set {FABRIC_BRIDGE} up"]
    for h in hosts:
        for dev in range(layout.devices):
            port = layout.fabric_port(h, dev)
            fabric += [
                f"link add {port} type veth peer name {layout.device_iface(dev)} netns {layout.host_netns(h)}",
                f"link set {port} master {FABRIC_BRIDGE} up",
            ]
    ip_batch(fabric, netns=layout.fabric_netns)

    for h in hosts:
        lines = ["link set lo up", f"addr add {layout.mgmt_ip(h)}/{layout.mgmt_network.prefixlen} dev {MGMT_IFACE}"]
        lines += [f"link set {MGMT_IFACE} up"]
        lines += [f"link set {layout.device_iface(dev)} up" for dev in range(layout.devices)]
        ip_batch(lines, netns=layout.host_netns(h))


def destroy(prefix: str) -> None:
    """Delete every namespace and root link named ``prefix-*`` (veths inside go with them)."""
    netns = bed_netns(prefix)
    if netns:
        ip_batch((f"netns del {ns}" for ns in netns), force=True)
    links = bed_links(prefix)
    if links:
        ip_batch((f"link del {link}" for link in links), force=True)
    left = bed_netns(prefix) + bed_links(prefix)
    if left:
        raise BedError(f"could not delete {', '.join(left)}: see `ip netns list` / `ip link`")


def set_mgmt_link(layout: Layout, host: str, up: bool) -> None:
    """``mgmt-down`` (down) or ``mgmt-up`` (up) the bridge side of ``host``'s management link.

    Down, the host is gone from the controller's view (and every other host's) as if it had died:
    no SSH, no answer; what runs inside it keeps running, cut off.
    """
    layout.check_host(host)
    run(["ip", "link", "set", layout.mgmt_veth(host), "up" if up else "down"])


def set_fabric_port(layout: Layout, host: str, device: int, up: bool) -> None:
    """``cut`` (down) or ``restore`` (up) the fabric side of ``host``'s ``eth<device>``."""
    layout.check_host(host)
    layout.check_device(device)
    port = layout.fabric_port(host, device)
    run(["ip", "-n", layout.fabric_netns, "link", "set", port, "up" if up else "down"])
