# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pure parsers for what ``hccn_tool ... -g`` prints on stdout.

Every parser takes the raw stdout text and returns plain data, or raises :class:`ParseError`
carrying that raw text, so the caller can show the operator exactly what the driver said.
The parsers accept every variant listed in the reference (section 1): padded values,
``netdetect addr:`` (current drivers) and ``netdetect address:`` (older drivers), several
``ipaddr``/``netmask`` pairs, health values with spaces, ``0.0.0.0`` meaning "unset".

Runs on target hosts: Python 3.8+, stdlib only.
"""

from __future__ import annotations

import re

UNSET_ADDRESS = "0.0.0.0"

# Values of `net health status`, in the driver's enum order (reference section 1).
NET_HEALTH_VALUES = (
    "Success",
    "Socket fail",
    "Receive timeout",
    "Unreachable",
    "Time exceeded",
    "Fault",
    "Init",
    "Thread error",
    "Detect ip set",
    "Unknown",
)

_IPV4 = re.compile(r"^(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)$")
_IPADDR_LINE = re.compile(r"^\s*ipaddr\s*:\s*(?P<value>\S*)\s*$", re.IGNORECASE)
_NETMASK_LINE = re.compile(r"^\s*netmask\s*:\s*(?P<value>\S*)\s*$", re.IGNORECASE)
_GATEWAY = re.compile(r"default\s+gateway\s*:\s*(?P<gateway>[^,\s]*)\s*(?:,\s*iface\s*:\s*(?P<iface>\S+))?", re.IGNORECASE)
_NETDETECT = re.compile(r"netdetect\s+addr(?:ess)?\s*:\s*(?P<value>\S*)", re.IGNORECASE)
_NET_HEALTH = re.compile(r"net\s+health\s+status\s*:\s*(?P<value>\S(?:.*\S)?)\s*$", re.IGNORECASE | re.MULTILINE)
_LINK = re.compile(r"link\s+status\s*:\s*(?P<value>\S+)", re.IGNORECASE)
_MAC = re.compile(r"mac\s+addr(?:ess)?\s*:\s*(?P<value>(?:[0-9a-f]{2}[:-]){5}[0-9a-f]{2})", re.IGNORECASE)
# `-tls -g`'s first line: `tls switch[N](...)`, then (some drivers) `tls preconfigured[N](...)`, then
# `tls alarm time threshold[N]days`. The HCCL documentation's TLS-inconsistency page (hcclug_000045,
# CANN 8.5) shows the line without the preconfigured field; the switch is the one field a gate needs.
_TLS_SWITCH = re.compile(r"tls\s+switch\s*\[\s*(?P<value>\d+)\s*\]", re.IGNORECASE)
_TLS_PRECONFIGURED = re.compile(r"tls\s+preconfigured\s*\[\s*(?P<value>\d+)\s*\]", re.IGNORECASE)
_TLS_THRESHOLD = re.compile(r"tls\s+alarm\s+time\s+threshold\s*\[\s*(?P<value>\d+)\s*\]", re.IGNORECASE)


class ParseError(ValueError):
    """``hccn_tool`` printed something this parser does not understand; ``raw`` holds it."""

    def __init__(self, what: str, raw: str) -> None:
        self.what = what
        self.raw = raw
        super().__init__("cannot parse %s from hccn_tool output %r" % (what, raw))


def normalize_address(value: str, what: str, raw: str) -> str:
    """Return ``value`` stripped, ``""`` for unset (empty or 0.0.0.0); ParseError if not IPv4."""
    value = (value or "").strip()
    if value in ("", UNSET_ADDRESS):
        return ""
    if not _IPV4.match(value):
        raise ParseError(what, raw)
    return value


def parse_ip(raw: str) -> dict:
    """Parse ``-ip -g``: ``ipaddr:X`` / ``netmask:Y`` lines, possibly several pairs.

    Returns ``{"address": first address, "netmask": its netmask, "ips": [{"address", "netmask"}, ...]}``.
    A netmask line attaches to the latest address that has none yet.
    """
    ips: list = []
    seen_any = False
    for line in raw.splitlines():
        match = _IPADDR_LINE.match(line)
        if match:
            seen_any = True
            ips.append({"address": normalize_address(match.group("value"), "ipaddr", raw), "netmask": ""})
            continue
        match = _NETMASK_LINE.match(line)
        if match:
            seen_any = True
            if not ips or ips[-1]["netmask"]:
                raise ParseError("netmask without ipaddr", raw)
            ips[-1]["netmask"] = normalize_address(match.group("value"), "netmask", raw)
    if not seen_any:
        raise ParseError("ipaddr/netmask", raw)
    ips = [entry for entry in ips if entry["address"]]
    primary = ips[0] if ips else {"address": "", "netmask": ""}
    return {"address": primary["address"], "netmask": primary["netmask"], "ips": ips}


def parse_gateway(raw: str) -> dict:
    """Parse ``-gateway -g``: ``default gateway:X, Iface:ethN`` -> ``{"gateway", "iface"}``."""
    match = _GATEWAY.search(raw)
    if not match:
        raise ParseError("default gateway", raw)
    return {
        "gateway": normalize_address(match.group("gateway"), "default gateway", raw),
        "iface": match.group("iface") or "",
    }


def parse_netdetect(raw: str) -> str:
    """Parse ``-netdetect -g`` (``netdetect addr: X`` or ``netdetect address: X``); ``""`` when unset."""
    match = _NETDETECT.search(raw)
    if not match:
        raise ParseError("netdetect address", raw)
    return normalize_address(match.group("value"), "netdetect address", raw)


def parse_net_health(raw: str) -> str:
    """Parse ``-net_health -g``: the raw status string (``Success``, ``Receive timeout``, ...)."""
    match = _NET_HEALTH.search(raw)
    if not match:
        raise ParseError("net health status", raw)
    return re.sub(r"\s+", " ", match.group("value"))


def parse_link(raw: str) -> str:
    """Parse ``-link -g``: ``"UP"`` or ``"DOWN"``."""
    match = _LINK.search(raw)
    if not match or match.group("value").upper() not in ("UP", "DOWN"):
        raise ParseError("link status", raw)
    return match.group("value").upper()


def parse_mac(raw: str) -> str:
    """Parse ``-mac -g``: the MAC address, lower case with colons."""
    match = _MAC.search(raw)
    if not match:
        raise ParseError("mac addr", raw)
    return match.group("value").lower().replace("-", ":")


def parse_tls(raw: str) -> dict:
    """Parse ``-tls -g`` -> ``{"tls_switch": bool, "tls_preconfigured": bool | None, "tls_alarm_days": int | None}``.

    Only the switch is required (ParseError without it). ``tls_preconfigured`` and ``tls_alarm_days`` are
    None (unknown) where the driver does not print them; of a multi-device output (``for i in ...``) the
    first device's line is read.
    """
    switch = _TLS_SWITCH.search(raw)
    if not switch:
        raise ParseError("tls switch", raw)
    line = raw[switch.start() :].split("\n", 1)[0]
    preconfigured = _TLS_PRECONFIGURED.search(line)
    threshold = _TLS_THRESHOLD.search(line)
    return {
        "tls_switch": switch.group("value") != "0",
        "tls_preconfigured": None if preconfigured is None else preconfigured.group("value") != "0",
        "tls_alarm_days": None if threshold is None else int(threshold.group("value")),
    }


PING_SUMMARY = re.compile(
    r"(?P<sent>\d+)\s+packets?\s+transmitted\s*,\s*(?P<received>\d+)\s+received\s*,\s*(?P<loss>\d+(?:\.\d+)?)\s*%\s*packet\s+loss",
    re.IGNORECASE,
)
_PING_TIME = re.compile(r"recv\s+seq\s*=\s*\d+\s*,\s*time\s*=\s*(?P<ms>\d+(?:\.\d+)?)\s*ms", re.IGNORECASE)


def parse_ping(raw: str) -> dict:
    """Parse ``-ping -g address X``: ``{"sent", "received", "loss_pct", "times_ms"}``.

    The summary line ``3 packets transmitted, 3 received, 0.00% packet loss`` is printed whether or
    not packets were lost (a loss also fails the command); ``recv seq=N,time=Tms`` lines give the
    round trips, ``recv time out seq=N`` lines the lost packets.
    """
    match = PING_SUMMARY.search(raw)
    if not match:
        raise ParseError("packets transmitted", raw)
    return {
        "sent": int(match.group("sent")),
        "received": int(match.group("received")),
        "loss_pct": float(match.group("loss")),
        "times_ms": [float(m.group("ms")) for m in _PING_TIME.finditer(raw)],
    }
