"""Bed mode: device N is the real interface ``ethN`` of the current network namespace.

Used inside the multi-host test bed (one host per network namespace). Addresses are applied
with ``ip addr flush/add``; link state comes from sysfs; reachability from a real
``ping -c 1 -W 1 -I ethN``. Safety guard: the simulator refuses to put any address outside
198.18.0.0/15 (RFC 2544 benchmarking range) on an interface.
"""

from __future__ import annotations

import os

from ._rt import GUARD_NET, SimError, guarded

SYS_NET = os.environ.get("ASCEND_SIM_SYSFS_NET", "/sys/class/net")


def ifname(dev_id: str) -> str:
    return "eth%d" % int(dev_id)


def _read(path):
    try:
        with open(path, encoding="ascii", errors="replace") as f:
            return f.read().strip()
    except OSError:
        return None


def link_up(dev_id: str) -> bool:
    """UP when the interface exists, has carrier and its operstate is up (or unknown)."""
    base = os.path.join(SYS_NET, ifname(dev_id))
    carrier = _read(os.path.join(base, "carrier"))
    operstate = _read(os.path.join(base, "operstate"))
    if carrier is None or operstate is None:
        return False
    return carrier == "1" and operstate in ("up", "unknown")


def _run(argv):
    import subprocess

    try:
        proc = subprocess.run(argv, capture_output=True, timeout=10, check=False)
    except FileNotFoundError:
        raise SimError("bed mode needs `%s` on PATH (install iproute2 / iputils-ping)" % argv[0]) from None
    except subprocess.TimeoutExpired:
        return 124, b"", b"timeout"
    return proc.returncode, proc.stdout, proc.stderr


def check_guard(address: str) -> None:
    if not guarded(address):
        raise SimError(
            "refusing to configure %s: in bed mode the simulator only puts addresses from %s/%d on real "
            "interfaces (safety guard); use a 198.18.x.x or 198.19.x.x address" % (address, GUARD_NET[0], GUARD_NET[1])
        )


def apply_address(dev_id: str, address: str, prefix: int) -> None:
    """Replace the IPv4 addresses of ethN with ``address/prefix`` (guarded)."""
    check_guard(address)
    name = ifname(dev_id)
    rc, _out, err = _run(["ip", "-4", "addr", "flush", "dev", name])
    if rc != 0:
        raise SimError("`ip -4 addr flush dev %s` failed: %s" % (name, err.decode("utf-8", "replace").strip()))
    rc, _out, err = _run(["ip", "addr", "add", "%s/%d" % (address, prefix), "dev", name])
    if rc != 0:
        raise SimError("`ip addr add %s/%d dev %s` failed: %s" % (address, prefix, name, err.decode("utf-8", "replace").strip()))


def set_link(dev_id: str, up: bool) -> None:
    """``ip link set ethN up|down`` (used by link faults in bed mode)."""
    name = ifname(dev_id)
    rc, _out, err = _run(["ip", "link", "set", "dev", name, "up" if up else "down"])
    if rc != 0:
        raise SimError("`ip link set dev %s` failed: %s" % (name, err.decode("utf-8", "replace").strip()))


def ping(dev_id: str, target: str) -> bool:
    """One real ICMP echo from ethN; True when it was answered."""
    rc, _out, _err = _run(["ping", "-c", "1", "-W", "1", "-I", ifname(dev_id), target])
    return rc == 0
