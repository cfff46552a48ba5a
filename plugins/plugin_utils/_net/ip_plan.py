# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Device IP plans for a whole cluster: compute one from a few numbers, and check any plan.

A plan maps each server (inventory host name) to its devices' wanted settings::

    {"server0": [{"device_id": 0, "address": "192.168.100.101", "netmask": "255.255.255.0",
                  "gateway": "", "netdetect": ""}, ...], ...}

Layouts (reference section 1, "IP planning"):

- ``smp`` (Atlas 800 training, 910A): devices d and d+4 share a subnet, devices 0-3 are in four
  different subnets. Host number on server i: ``first_host + i * server_step``, plus ``pair_offset``
  for devices 0-3. Seed 004 is ``first_host=100, server_step=10, pair_offset=1`` on
  192.168.100-103.0/24: server0 devices 0-3 = .101, 4-7 = .100; server1 .111 / .110.
- ``amp`` (A2/A3): every device in one subnet, consecutive addresses:
  ``first_host + i * server_step + d`` with ``server_step`` = devices per server by default.

The check covers the whole cluster at once (duplicates across servers included) and lists every
problem it finds. Every rule on one device's settings (its address, netmask, gateway and netdetect
target) is ``module_utils/_hccn/ip_rules.check_device``'s, which the ``hccn_config`` module also runs on
each target before it sets anything; this module adds what only the whole plan shows: an address
planned twice, a gateway that is another device, the smp layout's subnets, a netdetect target the
device has no route to. Computing a plan needs netaddr; checking one does not.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping, Sequence
from typing import Any

try:
    import netaddr
except ImportError:  # the filters then fail with an install hint, like community.general's do
    netaddr = None  # type: ignore[assignment]  # the optional-import idiom: None means not installed

from ansible_collections.ascend.cluster.plugins.module_utils._hccn.ip_rules import check_device, normalize_netmask
from ansible_collections.ascend.cluster.plugins.plugin_utils._errors import ClusterSpecError
from ansible_collections.ascend.cluster.plugins.plugin_utils._rank.chip_rules import device_id_of, resolve_chip
from ansible_collections.ascend.cluster.plugins.plugin_utils._rank.model import device_ranges

LAYOUTS = ("smp", "amp")
NETDETECT_MODES = ("gateway", "peer", "none")
SMP_PAIR_DISTANCE = 4  # Atlas 800: device d pairs with device d + 4
_SHOWN_PROBLEMS = 30


def require_netaddr() -> None:
    """ClusterSpecError with the install hint when netaddr is missing on the controller."""
    if netaddr is None:
        raise ClusterSpecError("device IP plans need the netaddr Python library on the controller: pip install netaddr")


# --- computing a plan ------------------------------------------------------------------------


def server_names(servers: Any) -> list[str]:
    """Host names from a list of names or of dicts with ``host`` / ``name`` / ``server_id``."""
    if isinstance(servers, (str, Mapping)) or not isinstance(servers, Sequence):
        raise ClusterSpecError("the input must be a list of server names (for example ansible_play_hosts)")
    names = []
    for index, server in enumerate(servers):
        if isinstance(server, Mapping):
            name = next((server[k] for k in ("host", "name", "server_id") if server.get(k)), None)
        else:
            name = server
        if not isinstance(name, str) or not name:
            raise ClusterSpecError(f"server {index}: {server!r} is not a host name nor a dict with 'host'")
        names.append(name)
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise ClusterSpecError(f"servers listed more than once: {', '.join(repeated)}")
    if not names:
        raise ClusterSpecError("no server given: the plan needs at least one server")
    return names


def _network(value: Any, what: str) -> netaddr.IPNetwork:
    try:
        net = netaddr.IPNetwork(str(value), version=4)
    except (netaddr.AddrFormatError, ValueError, TypeError):
        raise ClusterSpecError(f"{what} {value!r} is not an IPv4 network (write it as a.b.c.0/24)") from None
    if "/" not in str(value):
        raise ClusterSpecError(f"{what} {value!r} has no prefix length (write it as a.b.c.0/24)")
    return net.cidr


def _networks(networks: Any, layout: str, per_server: int) -> list[netaddr.IPNetwork]:
    if isinstance(networks, str):
        networks = [networks]
    if not isinstance(networks, Sequence) or isinstance(networks, Mapping):
        raise ClusterSpecError("networks must be a list of IPv4 networks such as 192.168.100.0/24")
    nets = [_network(n, f"networks[{i}]") for i, n in enumerate(networks)]
    wanted = per_server // 2 if layout == "smp" else 1
    if len(nets) != wanted:
        if layout == "smp":
            raise ClusterSpecError(
                f"the smp layout puts devices d and d+{wanted} in one subnet: it needs {wanted} networks "
                f"(one per device 0-{wanted - 1}), got {len(nets)}"
            )
        raise ClusterSpecError(f"the amp layout puts every device in one subnet: give one network, got {len(nets)}")
    return nets


def _host(net: netaddr.IPNetwork, number: int, what: str) -> str:
    if not 0 < number < net.size - 1:
        raise ClusterSpecError(
            f"{what}: host number {number} does not fit in {net} (1-{net.size - 2}); use a wider network or lower first_host / server_step"
        )
    return str(net[number])


def _int(value: Any, what: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ClusterSpecError(f"{what} must be a whole number >= {minimum}, got {value!r}")
    return value


def build_plan(
    servers: Any,
    layout: str,
    networks: Any,
    first_host: int = 100,
    server_step: int | None = None,
    pair_offset: int = 1,
    device_count: int = 8,
    gateway_host: int | None = None,
    netdetect: str | None = None,
) -> dict[str, list[dict[str, Any]]]:
    """Compute the plan of every server (see the module docstring for the layouts)."""
    require_netaddr()
    names = server_names(servers)
    if layout not in LAYOUTS:
        raise ClusterSpecError(f"layout {layout!r} is unknown: use smp (Atlas 800, 910A) or amp (A2/A3, one subnet)")
    count = _int(device_count, "device_count", 1)
    if layout == "smp" and count != 2 * SMP_PAIR_DISTANCE:
        raise ClusterSpecError(f"the smp layout is for 8-device Atlas 800 servers: device_count must be 8, got {count}")
    nets = _networks(networks, layout, count)
    first = _int(first_host, "first_host", 1)
    offset = _int(pair_offset, "pair_offset", 0) if layout == "smp" else 0
    step = _int(server_step if server_step is not None else (10 if layout == "smp" else count), "server_step", 1)
    mode = netdetect or ("gateway" if gateway_host is not None else "none")
    if mode not in NETDETECT_MODES:
        raise ClusterSpecError(f"netdetect {netdetect!r} is unknown: use gateway, peer or none")
    if mode == "gateway" and gateway_host is None:
        raise ClusterSpecError(
            "netdetect=gateway (role: ascend_device_ip_netdetect=gateway) needs gateway_host, the gateway's host number such "
            "as 1 (role: ascend_device_ip_gateway_host)"
        )
    if mode == "peer" and len(names) < 2:
        raise ClusterSpecError(
            "netdetect=peer (role: ascend_device_ip_netdetect=peer) needs at least two servers (each probes the next server's device)"
        )
    if gateway_host is not None and (isinstance(gateway_host, bool) or not isinstance(gateway_host, int)):
        raise ClusterSpecError(f"gateway_host must be a whole number (1 for .1, -2 for the last one), got {gateway_host!r}")

    def address(server: int, device: int) -> str:
        if layout == "smp":
            net = nets[device % SMP_PAIR_DISTANCE]
            number = first + server * step + (offset if device < SMP_PAIR_DISTANCE else 0)
        else:
            net, number = nets[0], first + server * step + device
        return _host(net, number, f"{names[server]} device {device}")

    plan: dict[str, list[dict[str, Any]]] = {}
    for index, name in enumerate(names):
        entries = []
        for device in range(count):
            net = nets[device % SMP_PAIR_DISTANCE] if layout == "smp" else nets[0]
            gateway = "" if gateway_host is None else _gateway(net, gateway_host)
            target = {"gateway": gateway, "none": "", "peer": None}[mode]
            if target is None:
                target = address((index + 1) % len(names), device)
            entries.append(
                {
                    "device_id": device,
                    "address": address(index, device),
                    "netmask": str(net.netmask),
                    "gateway": gateway,
                    "netdetect": target,
                }
            )
        plan[name] = entries
    return validate_plan(plan, layout=layout)


def _gateway(net: netaddr.IPNetwork, number: int) -> str:
    index = number if number >= 0 else net.size + number
    if not 0 < index < net.size - 1:
        raise ClusterSpecError(f"gateway_host {number} is not a host of {net} (use 1-{net.size - 2}, or -2 for the last)")
    return str(net[index])


# --- checking a plan -------------------------------------------------------------------------


def _netmask(value: Any) -> str | None:
    """The dotted netmask (``_hccn.ip_rules.normalize_netmask``), None when ``value`` is not a netmask."""
    try:
        return normalize_netmask(value)
    except ValueError:
        return None


def plan_settled(entries: Any, facts: Any, hccn_conf: str | None = None) -> bool:
    """Whether one host's device facts already show its plan ``entries``, with an hccn.conf that agrees.

    ``facts`` is the host's ``ascend_npu`` (``hccn_facts``), read in the same run after the last
    change to the devices; then ``hccn_config`` would set nothing and rewrite nothing, and the
    round trip can be spared. Anything unsure is "not settled" (the module then decides): no
    facts, a device missing or unread, a value that differs, a stale hccn.conf line, facts read
    from another hccn.conf than ``hccn_conf``, no entries.
    """
    if not isinstance(facts, Mapping) or not entries or not isinstance(entries, Sequence):
        return False
    if hccn_conf and facts.get("hccn_conf") != hccn_conf:
        return False
    devices = {dev.get("device_id"): dev for dev in facts.get("devices") or () if isinstance(dev, Mapping)}
    for entry in entries:
        dev = devices.get(entry.get("device_id")) if isinstance(entry, Mapping) else None
        if dev is None or dev.get("error") or dev.get("stale_conf"):
            return False
        if not dev.get("device_ip") or dev.get("device_ip") != entry.get("address"):
            return False
        if _netmask(entry.get("netmask")) is None or _netmask(dev.get("netmask")) != _netmask(entry.get("netmask")):
            return False
        if any(entry.get(field) and dev.get(field) != entry[field] for field in ("gateway", "netdetect")):
            return False
    return True


class _Checker:
    """Collects every problem of a plan; ``entries`` are the normalized entries per host."""

    def __init__(self, chip: str | None) -> None:
        self.profile = resolve_chip(chip)
        self.problems: list[str] = []
        self.owners: dict[str, list[str]] = {}

    def entry(self, host: str, index: int, raw: Any, seen: set[int]) -> dict[str, Any] | None:
        where = f"{host} entry {index}"
        if not isinstance(raw, Mapping):
            self.problems.append(f"{where}: {raw!r} is not a dict with device_id, address, netmask")
            return None
        try:
            device = device_id_of(raw.get("device_id"), where, self.profile)
        except ClusterSpecError as exc:
            self.problems.append(str(exc))
            return None
        where = f"{host} device {device}"
        if device in seen:
            self.problems.append(f"{where}: listed more than once")
            return None
        seen.add(device)
        entry, problems = check_device(dict(raw, device_id=device), where)
        self.problems += problems
        if "address" not in entry:
            return None
        net = ipaddress.IPv4Interface(f"{entry['address']}/{entry['netmask']}").network
        if entry["netdetect"] and ipaddress.IPv4Address(entry["netdetect"]) not in net and not entry["gateway"]:
            # hccn_tool accepts it, and net_health then fails: the device has no route to the target.
            self.problems.append(
                f"{where}: netdetect {entry['netdetect']} is outside the device subnet {net} and the plan gives the "
                f"device no gateway to reach it; plan a gateway in {net}, or a netdetect target inside it"
            )
        self.owners.setdefault(entry["address"], []).append(where)
        return entry

    def cluster(self, plan: dict[str, list[dict[str, Any]]]) -> None:
        for address, owners in sorted(self.owners.items()):
            if len(owners) > 1:
                self.problems.append(f"address {address} is planned {len(owners)} times: {', '.join(owners)}")
        for host, entries in plan.items():
            for entry in entries:
                holders = self.owners.get(entry["gateway"])
                if holders:
                    self.problems.append(f"{host} device {entry['device_id']}: gateway {entry['gateway']} is the address of {holders[0]}")

    def smp(self, host: str, entries: list[dict[str, Any]]) -> None:
        nets = {e["device_id"]: ipaddress.IPv4Interface(f"{e['address']}/{e['netmask']}").network for e in entries}
        for device in range(SMP_PAIR_DISTANCE):
            pair = device + SMP_PAIR_DISTANCE
            if device in nets and pair in nets and nets[device] != nets[pair]:
                self.problems.append(
                    f"{host}: smp layout: devices {device} and {pair} must share a subnet, got {nets[device]} and {nets[pair]}"
                )
        firsts: dict[Any, list[int]] = {}
        for device in range(SMP_PAIR_DISTANCE):
            if device in nets:
                firsts.setdefault(nets[device], []).append(device)
        for net, devices in firsts.items():
            if len(devices) > 1:
                self.problems.append(
                    f"{host}: smp layout: devices {', '.join(map(str, devices))} share {net}; devices 0-3 must each be in their own subnet"
                )


REPLACING_MODES = ("gateway", "peer")


def replaced_netdetects(plan: dict[str, list[dict[str, Any]]], mode: str, servers: Sequence[Any]) -> list[str]:
    """The planned netdetect targets a later stage that points every device at ``mode`` would replace.

    ``mode`` is the net_health role's: ``gateway`` (the device's gateway) or ``peer`` (the device with
    the same id on the next server of ``servers``, the play's order, the last probing the first). A
    plan entry's own target that differs from that would be set, then silently replaced.
    """
    if mode not in REPLACING_MODES:
        raise ClusterSpecError(f"replaced_netdetect {mode!r} is unknown: use gateway or peer (or leave it unset)")
    order = [str(host) for host in servers or () if str(host) in plan] or list(plan)
    problems = []
    for index, host in enumerate(order):
        peer = {e["device_id"]: e["address"] for e in plan.get(order[(index + 1) % len(order)], [])}
        for entry in plan[host]:
            if not entry["netdetect"]:
                continue
            if mode == "gateway":
                target = entry["gateway"] or "the device's gateway"
            else:
                target = (peer.get(entry["device_id"]) or "the same device of the next server") if len(order) > 1 else "nothing"
            if entry["netdetect"] != target:
                problems.append(
                    f"{host} device {entry['device_id']}: the plan's netdetect {entry['netdetect']} would be replaced by "
                    f"{target} (net_health netdetect={mode}); drop netdetect from the plan, or keep the plan's targets "
                    f"with ascend_net_health_netdetect=keep"
                )
    return problems


def known_devices(facts: Any) -> dict[str, list[int]]:
    """``{host: [device ids]}`` of the hosts whose ``ascend_npu`` facts are known.

    ``facts`` is a list of hosts' variables (``ansible_play_hosts_all | map('extract', hostvars)``; a host without
    ``ansible_facts.ascend_npu`` - not read, or left out of the run - is not in the result), or a mapping
    host -> ``ascend_npu`` facts.
    """
    if isinstance(facts, Mapping):
        items = list(facts.items())
    elif isinstance(facts, Sequence) and not isinstance(facts, str):
        items = []
        for item in facts:
            if not isinstance(item, Mapping) or not item.get("inventory_hostname"):
                raise ClusterSpecError(f"facts: {item!r} is not a host's variables (ansible_play_hosts_all | map('extract', hostvars))")
            found = item.get("ansible_facts")
            items.append((item["inventory_hostname"], found.get("ascend_npu") if isinstance(found, Mapping) else None))
    else:
        raise ClusterSpecError("facts must be a list of hosts' variables or a mapping host -> ascend_npu facts")
    known = {}
    for host, npu in items:
        if isinstance(npu, Mapping) and isinstance(npu.get("devices"), Sequence):
            known[str(host)] = [
                dev["device_id"] for dev in npu["devices"] if isinstance(dev, Mapping) and isinstance(dev.get("device_id"), int)
            ]
    return known


def missing_devices(plan: Mapping[str, list[dict[str, Any]]], known: Mapping[str, Sequence[int]]) -> list[str]:
    """One problem per host whose plan sets a device its facts do not list (hccn_config would refuse it on that host
    only, after the others changed)."""
    problems = []
    for host, entries in plan.items():
        if host not in known:
            continue
        absent = sorted({entry["device_id"] for entry in entries} - set(known[host]))
        if absent:
            has = f"its devices are {device_ranges(known[host])}" if known[host] else "its facts list no device"
            problems.append(
                f"{host}: the plan sets {'devices' if len(absent) > 1 else 'device'} {device_ranges(absent)}, which {host} does not "
                f"have ({has}, as hccn_facts read them); plan only the devices it has (its ascend_device_ips, or "
                f"ascend_device_ip_device_count)"
            )
    return problems


def validate_plan(
    plan: Any,
    chip: str | None = None,
    layout: str | None = None,
    replaced_netdetect: str | None = None,
    servers: Sequence[Any] | None = None,
    facts: Any = None,
) -> dict[str, list[dict[str, Any]]]:
    """Check a whole-cluster plan; return it normalized, or raise ClusterSpecError listing every problem.

    ``replaced_netdetect``: the netdetect mode (gateway, peer) of a later stage that points every device
    at its own target (prepare.yml's net_health stage); a planned target it would replace is a problem
    (:func:`replaced_netdetects`, peers in the order of ``servers``).
    ``facts``: the hosts' facts (:func:`known_devices`); a host whose facts are known may be planned only the
    devices they list (:func:`missing_devices`), so that no host's plan is refused on that host after the
    others were changed.
    """
    if not isinstance(plan, Mapping):
        raise ClusterSpecError("the plan must be a dict: host name -> list of {device_id, address, netmask, ...}")
    if layout is not None and layout not in LAYOUTS:
        raise ClusterSpecError(f"layout {layout!r} is unknown: use smp or amp (or leave it unset)")
    checker = _Checker(chip)
    normalized: dict[str, list[dict[str, Any]]] = {}
    for host, entries in plan.items():
        if isinstance(entries, (str, Mapping)) or not isinstance(entries, Sequence):
            checker.problems.append(f"{host}: the plan entry must be a list of devices, got {entries!r}")
            continue
        seen: set[int] = set()
        checked = [checker.entry(str(host), i, raw, seen) for i, raw in enumerate(entries)]
        normalized[str(host)] = sorted((e for e in checked if e is not None), key=lambda e: e["device_id"])
    checker.cluster(normalized)
    if facts is not None:
        checker.problems += missing_devices(normalized, known_devices(facts))
    if replaced_netdetect:
        checker.problems += replaced_netdetects(normalized, replaced_netdetect, servers or list(normalized))
    if layout == "smp":
        for host, entries in normalized.items():
            checker.smp(host, entries)
    if checker.problems:
        shown = checker.problems[:_SHOWN_PROBLEMS]
        more = len(checker.problems) - len(shown)
        raise ClusterSpecError(
            f"the device IP plan has {len(checker.problems)} problem(s), nothing was changed: "
            + "; ".join(shown)
            + (f"; and {more} more" if more else "")
        )
    return normalized
