"""Runtime core of the simulated tools: where the state lives and how to read it fast.

Everything here runs on every ``hccn_tool`` call, under ``python3 -S``: import only builtin
modules (``posix``, ``marshal``) at module level - even ``os`` (with ``stat``, ``posixpath``,
``_collections_abc``) costs about a millisecond per call. ``json`` costs ~10 ms of CPU (it pulls in
``re`` and ``enum``), so readers use the marshal cache that every writer refreshes next to
``state.json`` and fall back to ``json`` only when the cache is missing or stale (hand edits).
"""

from __future__ import annotations

import marshal
import posix

DEFAULT_STATE_DIR = "/etc/ascend-sim"
STATE_FILE = "state.json"
CACHE_FILE = "state.cache"
LOCK_FILE = "state.lock"
FABRIC_SUFFIX = ".host"

# hccn_tool's device-side defaults
UNSET_IP = "0.0.0.0"


class SimError(Exception):
    """A problem of the simulator itself (not an hccn_tool error): printed as ``ascend-sim: ...``."""


def state_dir(default: str | None = None) -> str:
    """The state directory: ``$ASCEND_SIM_STATE``, else the wrapper's default, else /etc/ascend-sim."""
    env = posix.environ.get(b"ASCEND_SIM_STATE")
    return (env.decode("utf-8", "surrogateescape") if env else None) or default or DEFAULT_STATE_DIR


def getenv(name: str) -> str | None:
    value = posix.environ.get(name.encode("ascii"))
    return value.decode("utf-8", "surrogateescape") if value is not None else None


def _stat_key(path):
    st = posix.stat(path)
    return (st.st_ino, st.st_mtime_ns, st.st_size)


def load(sdir: str) -> dict:
    """Return the state dict of ``sdir`` without taking a lock (writers replace files atomically)."""
    jpath = sdir + "/" + STATE_FILE
    try:
        key = _stat_key(jpath)
    except FileNotFoundError:
        raise SimError(
            "no simulator state in %s: run `ascend-sim init --state %s --chip 910B` first "
            "(or point ASCEND_SIM_STATE at an initialised state directory)" % (sdir, sdir)
        ) from None
    try:
        with open(sdir + "/" + CACHE_FILE, "rb") as f:
            cached_key, data = marshal.load(f)
        if tuple(cached_key) == key:
            return data
    except (OSError, EOFError, ValueError, TypeError):
        pass
    import json  # slow path: cache missing or stale

    with open(jpath, encoding="utf-8") as f:
        return json.load(f)


def fabric_key(sdir: str) -> str:
    """File name (without suffix) under which a state directory publishes itself in a fabric."""
    import os

    real = os.path.realpath(sdir)
    return real.strip("/").replace("/", "_") or "root"


def read_fabric(fabric_dir: str) -> list:
    """Every host published in ``fabric_dir`` (list of dicts), unreadable entries skipped."""
    hosts: list[dict] = []
    try:
        names = posix.listdir(fabric_dir)
    except OSError:
        return hosts
    for name in names:
        if not name.endswith(FABRIC_SUFFIX):
            continue
        try:
            with open(fabric_dir + "/" + name, "rb") as f:
                hosts.append(marshal.load(f))
        except (OSError, EOFError, ValueError, TypeError):
            continue
    return hosts


# ---------------------------------------------------------------------------------------------
# IPv4 helpers (the ``ipaddress`` module is too slow to import on the hot path)


def ip_to_int(text: str) -> int | None:
    """Dotted quad to int, or None when it is not exactly what inet_pton(AF_INET) accepts."""
    parts = text.split(".")
    if len(parts) != 4:
        return None
    value = 0
    for part in parts:
        if not part or len(part) > 3 or not part.isdigit() or not part.isascii():
            return None
        octet = int(part)
        if octet > 255:
            return None
        value = (value << 8) | octet
    return value


def int_to_ip(value: int) -> str:
    return "%d.%d.%d.%d" % ((value >> 24) & 255, (value >> 16) & 255, (value >> 8) & 255, value & 255)


def mask_prefix(mask: int) -> int | None:
    """Prefix length of a contiguous netmask, None when the mask is not contiguous."""
    inverted = (~mask) & 0xFFFFFFFF
    if inverted & (inverted + 1):
        return None
    return 32 - inverted.bit_length()


def same_subnet(a: str, b: str, mask: str) -> bool:
    ai, bi, mi = ip_to_int(a), ip_to_int(b), ip_to_int(mask)
    if ai is None or bi is None or mi is None:
        return False
    return (ai & mi) == (bi & mi)


def in_net(ip: str, net: str, prefix: int) -> bool:
    """True when ``ip`` lies in ``net/prefix``."""
    ii, ni = ip_to_int(ip), ip_to_int(net)
    if ii is None or ni is None:
        return False
    mask = (0xFFFFFFFF << (32 - prefix)) & 0xFFFFFFFF if prefix else 0
    return (ii & mask) == (ni & mask)


# The simulator's safety guard for bed mode: only the benchmarking range RFC 2544 reserves.
GUARD_NET = ("198.18.0.0", 15)


def guarded(ip: str) -> bool:
    return in_net(ip, GUARD_NET[0], GUARD_NET[1])
