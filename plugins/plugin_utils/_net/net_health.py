# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The cluster's parameter-plane health, from every server's ``ascend_npu`` facts.

One row per (server, device) for the summary table, and one problem per bad device, each naming
the server, the device and its status and carrying the hint that tells the operator what to check
next. The hints live here and nowhere else (the ``net_health`` role and its tests use them).

Per device: an unreadable device, an answer of ``hccn_tool`` the facts could not read (its field unknown: the
device is refused, naming the field and the answer, docs/real-outputs.md), no IP, link DOWN, a net_health other
than ``Success``, a stale ``/etc/hccn.conf``. Whole cluster: the TLS switch must be the same on every device (HCCL), device
IPs unique and each device subnet consistent with the chip's layout (``_net.ip_plan.validate_plan``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ansible_collections.ascend.cluster.plugins.module_utils._hccn.ip_rules import netmask_prefix
from ansible_collections.ascend.cluster.plugins.plugin_utils._errors import ClusterSpecError
from ansible_collections.ascend.cluster.plugins.plugin_utils._net.ip_plan import LAYOUTS, validate_plan
from ansible_collections.ascend.cluster.plugins.plugin_utils._net.ping_mesh import lost_pings, ping_problem
from ansible_collections.ascend.cluster.plugins.plugin_utils._rank.chip_rules import resolve_chip
from ansible_collections.ascend.cluster.plugins.plugin_utils._text_table import text_table

DEFAULT_HCCN_CONF = "/etc/hccn.conf"
UNREACHED = ("Receive timeout", "Unreachable", "Time exceeded")
# Faults of a device that make every probe aimed at it fail.
ROOT_CAUSES = ("unreadable", "no IP", "link DOWN", "Fault")
# The hccn_tool queries whose fields this check needs (hccn_facts' ``unparsed`` keys), and what they give.
NEEDED = (("ip", "device IP"), ("link", "link status"), ("net_health", "net health status"))

HINTS = {
    "error": "hccn_tool failed ({error}); check the driver (npu-smi info) and rerun",
    "no_ip": "no device IP; run the device IP stage (prepare.yml --tags device_ip)",
    "link_down": "check the optics/cable of NPU {device} (eth{device}) and its switch port",
    "no_target": "no netdetect target; give the device a gateway or use ascend_net_health_netdetect=peer",
    "init": "still Init; the netdetect target {target} has not answered yet: raise ascend_net_health_retries or check it",
    "socket_fail": "the probe of {target} was refused: check the peer is up, the TLS switches match and no firewall blocks it",
    "unreached": "{target} does not answer: check the target address, the route/gateway and the switch",
    "fault": "the NIC reports a fault: check the link and the device health (npu-smi info)",
    "other": "unexpected net_health status: check the device with hccn_tool -i {device} -net_health -g",
    "unparsed": (
        "{fields} unknown: `hccn_tool -i {device} -{query} -g` printed {raw!r}, which this collection cannot read; "
        "check the driver version, and report the output (docs/real-outputs.md)"
    ),
    "stale_conf": (
        "{conf} disagrees with the device on {keys}; the device is right: run prepare.yml --tags device_ip, "
        "which sets those values again so that hccn_tool rewrites the file"
    ),
    "tls": (
        "TLS switch differs between devices ({minority}); HCCL needs the same on every device: "
        "hccn_tool -i N -tls -s enable {majority_value} on those"
    ),
    "ip_layout": "device IPs break the cluster rules; fix the plan and rerun the device IP stage: {detail}",
}


def server_facts(item: Any, index: int) -> tuple[str, Mapping[str, Any]]:
    """(host name, ascend_npu facts) from a hostvars entry or a ``{host, ascend_npu}`` dict.

    A hostvars entry is read through its ``ansible_facts`` only, never a top-level ``ascend_npu``
    (an injected fact variable: gone when ``INJECT_FACTS_AS_VARS`` is off, deprecated before).
    """
    if not isinstance(item, Mapping):
        raise ClusterSpecError(f"entry {index} is not a host's variables: {item!r}")
    host = item.get("inventory_hostname") or item.get("host")
    if not host:
        raise ClusterSpecError(f"entry {index} has no inventory_hostname (or host)")
    if "ansible_facts" in item:
        facts = item.get("ansible_facts")
        npu = facts.get("ascend_npu") if isinstance(facts, Mapping) else None
    else:
        npu = item.get("ascend_npu")
    if not isinstance(npu, Mapping):
        raise ClusterSpecError(f"{host}: no ascend_npu facts; run ascend.cluster.hccn_facts on it first")
    return str(host), npu


def _device_problem(host: str, dev: Mapping[str, Any], check_conf: bool, conf: str = "") -> tuple[str, str] | None:
    """(status word, hint) for the first thing wrong with one device, None when healthy."""
    device = dev.get("device_id")
    target = dev.get("netdetect") or ""
    health = dev.get("net_health")
    if dev.get("error"):
        return "unreadable", HINTS["error"].format(error=str(dev["error"]).strip())
    unparsed = dev.get("unparsed") or {}
    for query, fields in NEEDED:
        if query in unparsed:
            return "unreadable", HINTS["unparsed"].format(fields=fields, device=device, query=query, raw=str(unparsed[query]))
    if not dev.get("device_ip"):
        return "no IP", HINTS["no_ip"]
    if dev.get("link") == "DOWN":
        return "link DOWN", HINTS["link_down"].format(device=device)
    if health != "Success":
        if health == "Init":
            return ("Init", HINTS["init"].format(target=target)) if target else ("no netdetect", HINTS["no_target"])
        if health == "Socket fail":
            return health, HINTS["socket_fail"].format(target=target)
        if health in UNREACHED:
            return health, HINTS["unreached"].format(target=target)
        if health == "Fault":
            return health, HINTS["fault"]
        return str(health), HINTS["other"].format(device=device)
    if check_conf and dev.get("stale_conf"):
        keys = ", ".join(dev.get("stale_keys") or []) or "some keys"
        return "conf stale", HINTS["stale_conf"].format(conf=conf or DEFAULT_HCCN_CONF, keys=keys)
    return None


def _tls_problem(devices: list[tuple[str, Mapping[str, Any]]]) -> str | None:
    """One problem when the TLS switch is not the same on every device that reported it, or is unknown on one whose
    ``-tls -g`` answer could not be read (HCCL needs the same switch everywhere: an unknown one is refused)."""
    seen: dict[bool, list[str]] = {}
    unknown = []
    for host, dev in devices:
        if dev.get("tls_switch") is not None:
            seen.setdefault(bool(dev["tls_switch"]), []).append(f"{host} device {dev.get('device_id')}")
        elif "tls" in (dev.get("unparsed") or {}):
            unknown.append(
                HINTS["unparsed"].format(
                    fields=f"{host} device {dev.get('device_id')}: TLS switch",
                    device=dev.get("device_id"),
                    query="tls",
                    raw=str(dev["unparsed"]["tls"]),
                )
            )
    if unknown:
        return "cluster: " + "; ".join(unknown)
    if len(seen) < 2:
        return None
    majority = max(seen, key=lambda value: (len(seen[value]), not value))
    minority = seen[not majority]
    label = "on" if not majority else "off"
    shown = ", ".join(minority[:8]) + (f" and {len(minority) - 8} more" if len(minority) > 8 else "")
    return "cluster: " + HINTS["tls"].format(minority=f"{label} at {shown}", majority_value=int(majority))


def _with_prefix(address: Any, netmask: Any) -> str | None:
    """``198.19.0.1/24`` for the table; the address alone when the netmask is not readable."""
    if not address:
        return None
    try:
        return f"{address}/{netmask_prefix(netmask)}"
    except ValueError:
        return str(address)


def _layout(layout: str | None, chip: str | None) -> str | None:
    if layout in (None, "", "auto"):
        profile = resolve_chip(chip)
        return "smp" if profile is not None and profile.hccs_rings else None
    if layout not in LAYOUTS:
        raise ClusterSpecError(f"layout {layout!r} is unknown: use auto, smp or amp")
    return layout


def _ip_problem(devices: list[tuple[str, Mapping[str, Any]]], chip: str | None, layout: str | None) -> str | None:
    plan: dict[str, list[dict[str, Any]]] = {}
    for host, dev in devices:
        if dev.get("device_ip") and dev.get("netmask"):
            plan.setdefault(host, []).append(
                {
                    "device_id": dev.get("device_id"),
                    "address": dev["device_ip"],
                    "netmask": dev["netmask"],
                    "gateway": dev.get("gateway") or "",
                }
            )
    try:
        validate_plan(plan, chip=chip, layout=layout)
    except ClusterSpecError as exc:
        detail = str(exc).replace(", nothing was changed", "")
        return "cluster: " + HINTS["ip_layout"].format(detail=detail)
    return None


def _planned_ips(item: Any) -> dict[Any, Mapping[str, Any]]:
    """``{device_id: after}`` of the addresses the device IP stage planned on this host (its ``device_ip_result``)."""
    result = item.get("device_ip_result")
    entries = result.get("devices") if isinstance(result, Mapping) else None
    planned = {}
    for entry in entries or []:
        after = entry.get("after") if isinstance(entry, Mapping) else None
        if isinstance(after, Mapping) and after.get("address") and "ip" in (entry.get("changes") or []):
            planned[entry.get("device_id")] = after
    return planned


def health_report(
    servers: Sequence[Any],
    chip: str | None = None,
    layout: str | None = "auto",
    check_tls: bool = True,
    check_conf: bool = True,
    check_mode: bool = False,
) -> dict[str, Any]:
    """``{rows, problems, bad, ok}`` for the whole cluster (see the module docstring).

    ``check_mode``: the play only plans; a device without an IP whose address the same run's device IP
    stage planned (the host's ``device_ip_result``) is shown with that address as ``IP planned``,
    not as a problem: nothing was set, so there is nothing else to check on it yet.
    """
    if isinstance(servers, (str, Mapping)) or not isinstance(servers, Sequence):
        raise ClusterSpecError("the input must be a list of hosts' variables (ansible_play_hosts | map('extract', hostvars))")
    devices: list[tuple[str, Mapping[str, Any]]] = []
    confs: dict[str, str] = {}  # host -> the hccn.conf its facts were checked against
    chips = []
    unclear: list[str] = []  # servers whose npu-smi names a chip that is not clear (hccn_facts' chip_problem)
    planned: dict[tuple[str, Any], Mapping[str, Any]] = {}
    lost: list[tuple[str, Mapping[str, Any]]] = []  # (host, hccn_ping result) of the ping mesh's pairs that lost packets
    for index, item in enumerate(servers):
        host, npu = server_facts(item, index)
        lost += [(host, r) for r in lost_pings(item)]
        chips.append(npu.get("chip"))
        if npu.get("chip_problem") and not npu.get("chip"):
            unclear.append(f"{host}: {npu['chip_problem']}")
        confs[host] = str(npu.get("hccn_conf") or "")
        devices += [(host, dev) for dev in npu.get("devices") or []]
        if check_mode:
            planned.update(((host, device), after) for device, after in _planned_ips(item).items())
    chip = chip or next((c for c in chips if c), None)
    found = [
        ("IP planned", "")
        if not dev.get("device_ip") and (host, dev.get("device_id")) in planned
        else _device_problem(host, dev, check_conf, confs.get(host, ""))
        for host, dev in devices
    ]
    # A device whose probe fails because its target is another device of the cluster that is
    # itself broken (cut link, no IP) is a symptom, not a second fault: name it with the culprit.
    owner = {dev["device_ip"]: i for i, (_host, dev) in enumerate(devices) if dev.get("device_ip")}
    seen_by: dict[int, list[str]] = {}
    for i, (host, dev) in enumerate(devices):
        culprit = owner.get(dev.get("netdetect") or "")
        problem = found[i]
        culprit_problem = found[culprit] if culprit is not None else None
        if (
            problem
            and problem[0] in UNREACHED + ("Socket fail",)
            and culprit is not None
            and culprit_problem
            and culprit_problem[0] in ROOT_CAUSES
        ):
            seen_by.setdefault(culprit, []).append(f"{host} device {dev.get('device_id')}")
            found[i] = ("target down", "")
    # A lost ping between two devices that are themselves fine is a fault of the path between them; when
    # either end already has a problem, that problem is the cause and the ping a symptom.
    at = {(host, dev.get("device_id")): i for i, (host, dev) in enumerate(devices)}
    path_faults: dict[int, list[str]] = {}
    for host, result in lost:
        sender, target = at.get((host, result.get("device_id"))), owner.get(result.get("address") or "")
        if sender is None or found[sender] or (target is not None and found[target]):
            continue
        path_faults.setdefault(sender, []).append(ping_problem(host, result))
    rows, problems, bad = [], [], []
    for i, (host, dev) in enumerate(devices):
        if i in path_faults:
            problems += path_faults[i]
            bad.append({"server": host, "device": dev.get("device_id"), "status": "ping lost"})
            found[i] = ("ping lost", "")
        problem = found[i]
        if problem and problem[0] not in ("target down", "IP planned", "ping lost"):
            also = seen_by.get(i)
            suffix = f"; {', '.join(also)} probing it fail(s) because of it" if also else ""
            problems.append(f"{host} device {dev.get('device_id')}: {problem[0]} - {problem[1]}{suffix}")
            bad.append({"server": host, "device": dev.get("device_id"), "status": problem[0]})
        tls = dev.get("tls_switch")
        plan = planned.get((host, dev.get("device_id"))) or {}
        rows.append(
            {
                "server": host,
                "device": dev.get("device_id"),
                "ip": _with_prefix(dev.get("device_ip"), dev.get("netmask")) or _with_prefix(plan.get("address"), plan.get("netmask")),
                "link": dev.get("link"),
                "health": dev.get("net_health"),
                "netdetect": dev.get("netdetect") or None,
                "tls": None if tls is None else ("on" if tls else "off"),
                "status": problem[0] if problem else "ok",
            }
        )
    cluster = [_tls_problem(devices) if check_tls else None, _ip_problem(devices, chip, _layout(layout, chip))]
    if unclear and layout in (None, "", "auto") and not chip:
        # the device IP layout a chip needs (smp on 910A) cannot be chosen: refuse rather than check the wrong one
        cluster.append(
            "cluster: the chip of a server is unclear, so its device IP layout (smp on 910A, amp on A2/A3) was not checked - "
            + "; ".join(unclear)
            + ". Check npu-smi info there, or name the layout (ascend_net_health_layout=smp or amp)"
        )
    problems += [p for p in cluster if p]
    return {"rows": rows, "problems": problems, "bad": bad, "ok": not problems}


HEALTH_COLUMNS = ("server", "device", "ip", "link", "health", "netdetect", "tls", "status")


LEFT_OUT = "left out of this run"


def health_summary(
    report: Mapping[str, Any], all_rows: bool = False, ok_rows: int = 4, check_mode: bool = False, left_out: Sequence[str] = ()
) -> dict[str, Any]:
    """``report`` (:func:`health_report`) as the document of docs/summaries.md: plus ``schema``,
    ``kind`` (``net_health``), ``check_mode``, ``left_out``, ``line`` (printed last) and ``table`` (the
    devices with a problem first; unless ``all_rows`` only ``ok_rows`` of the others).

    ``left_out``: the play's servers that are not in ``report`` (not reached or read, or failed earlier in the
    run): nothing of theirs was checked, and the line and the table say so (one row each, status ``left out
    of this run``); they are no problem of the parameter plane.
    """
    rows = list(report["rows"])
    problems = list(report["problems"])
    left = [str(host) for host in left_out or ()]
    servers = len({r["server"] for r in rows})
    good = sum(1 for r in rows if r["status"] == "ok")
    if problems:
        line = f"FAILED: net_health: {len(problems)} problem(s) on the parameter plane: {' | '.join(problems)}"
    else:
        line = f"net_health: {good}/{len(rows)} devices OK on {servers} server(s)"
    if left:
        line += f"; not checked: {', '.join(left)} ({LEFT_OUT})"
    if check_mode:
        line += " (check mode: no target was set)"
    shown = rows + [dict.fromkeys(HEALTH_COLUMNS, None) | {"server": host, "status": LEFT_OUT} for host in left]
    table = text_table(
        shown,
        HEALTH_COLUMNS,
        ok_column="status",
        ok_values=["ok"],
        max_ok=None if all_rows else int(ok_rows),
        more_hint="-e ascend_report_all_rows=true lists them",
    )
    return dict(report, schema=1, kind="net_health", check_mode=bool(check_mode), left_out=left, line=line, table=table)


NETDETECT_MODES = ("gateway", "peer")


def netdetect_targets(devices: Sequence[Any], mode: str, peer_devices: Sequence[Any] = ()) -> list[dict[str, Any]]:
    """The ``hccn_config`` entries that point each device with an IP at its netdetect target.

    ``gateway``: the device's own gateway; ``peer``: the IP of the device with the same id in
    ``peer_devices`` (the next server's facts). Devices without an IP or a target are left out
    (the report names them). Address and netmask are the device's current ones, so only the
    netdetect target can change.
    """
    if mode not in NETDETECT_MODES:
        raise ClusterSpecError(f"netdetect mode {mode!r} is unknown: use gateway or peer")
    peers = {dev.get("device_id"): dev.get("device_ip") for dev in peer_devices or () if isinstance(dev, Mapping)}
    targets = []
    for dev in devices or ():
        if not isinstance(dev, Mapping) or not dev.get("device_ip") or not dev.get("netmask"):
            continue
        target = dev.get("gateway") if mode == "gateway" else peers.get(dev.get("device_id"))
        if target:
            targets.append({"device_id": dev["device_id"], "address": dev["device_ip"], "netmask": dev["netmask"], "netdetect": target})
    return targets


def netdetect_targets_by_host(
    servers: Sequence[Any], mode: str, changes_only: bool = False, ring: Sequence[Any] | None = None
) -> dict[str, list[dict[str, Any]]]:
    """``netdetect_targets`` for every server of the play at once: ``{host: entries}``.

    ``servers`` are the hosts' variables (or ``{host, ascend_npu}`` dicts) in play order; under
    ``peer`` each server probes the next one, the last the first (a ring, so that every device is
    probed by one peer). One pass on the controller instead of one task per host.
    ``ring``: every server of the play in play order (``ansible_play_hosts_all``), those left out of
    ``servers`` too (not reached, or failed earlier): each keeps its place, and a server whose next one
    was left out gets no entries - its devices keep the targets they have instead of being pointed at
    the server after (the ring is not closed around a server that is only missing from this run).
    ``changes_only`` leaves out the devices whose facts already show their target (facts read in
    the same run), so a host with nothing to set needs no ``hccn_config`` call at all.
    """
    if mode not in NETDETECT_MODES:
        raise ClusterSpecError(f"netdetect mode {mode!r} is unknown: use gateway or peer")
    facts = dict(server_facts(item, index) for index, item in enumerate(servers or ()))
    order = [str(host) for host in ring] if ring else list(facts)
    unknown = [host for host in facts if host not in order]
    if unknown:
        raise ClusterSpecError(f"ring must list every server of the input; it lacks {', '.join(unknown)}")
    if mode == "peer" and len(order) < 2:
        raise ClusterSpecError("peer probing needs two servers or more: use gateway, or run on more servers")
    by_host: dict[str, list[dict[str, Any]]] = {}
    for index, host in enumerate(order):
        if host not in facts:
            continue
        npu = facts[host]
        peer = facts.get(order[(index + 1) % len(order)]) if mode == "peer" else None
        if mode == "peer" and peer is None:
            by_host[host] = []
            continue
        entries = netdetect_targets(npu.get("devices") or (), mode, (peer or {}).get("devices") or ())
        if changes_only:
            current = {dev.get("device_id"): dev.get("netdetect") for dev in npu.get("devices") or () if isinstance(dev, Mapping)}
            entries = [entry for entry in entries if current.get(entry["device_id"]) != entry["netdetect"]]
        by_host[host] = entries
    return by_host
