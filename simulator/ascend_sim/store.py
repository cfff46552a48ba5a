"""Writing simulator state: exclusive flock, atomic replace, marshal cache, fabric publication.

Writers (set commands, ``ascend-sim``) serialise on ``state.lock``; readers never lock: every file
they read is replaced atomically with ``os.replace``.
"""

from __future__ import annotations

import fcntl
import json
import marshal
import os
from contextlib import contextmanager

from ._rt import CACHE_FILE, FABRIC_SUFFIX, LOCK_FILE, STATE_FILE, SimError, _stat_key, fabric_key

STATE_VERSION = 1
# marshal format 4 is read by every Python since 3.4: writer and reader interpreters may differ.
MARSHAL_VERSION = 4


def _atomic_write(path: str, data: bytes, mode: int = 0o644) -> None:
    tmp = "%s.tmp.%d" % (path, os.getpid())
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)
    os.replace(tmp, path)


@contextmanager
def locked(sdir):
    """Hold the exclusive writer lock of state directory ``sdir``."""
    if not os.path.isdir(sdir):
        raise SimError("state directory %s does not exist: run `ascend-sim init --state %s ...`" % (sdir, sdir))
    fd = os.open(os.path.join(sdir, LOCK_FILE), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def read_json(sdir: str) -> dict:
    path = os.path.join(sdir, STATE_FILE)
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except FileNotFoundError:
        raise SimError("no simulator state in %s: run `ascend-sim init --state %s --chip 910B` first" % (sdir, sdir)) from None


def write(sdir: str, state: dict) -> None:
    """Replace state.json, its marshal cache, the fabric entry, then the answers. Caller holds ``locked``."""
    from . import answers

    jpath = os.path.join(sdir, STATE_FILE)
    _atomic_write(jpath, (json.dumps(state, indent=2, sort_keys=True) + "\n").encode("utf-8"))
    _atomic_write(os.path.join(sdir, CACHE_FILE), marshal.dumps((_stat_key(jpath), state), MARSHAL_VERSION))
    publish(sdir, state)
    answers.render(sdir)


def publish(sdir: str, state: dict) -> None:
    """Publish this host's device IPs, links and TLS switches in its fabric (fabric mode only)."""
    if state.get("mode") != "fabric" or not state.get("fabric"):
        return
    fabric = state["fabric"]
    os.makedirs(fabric, exist_ok=True)
    devices = {}
    for dev_id, dev in state["devices"].items():
        devices[dev_id] = {
            "ip": dev.get("ip"),
            "netmask": dev.get("netmask"),
            "link": dev.get("link", "UP"),
            "tls": dev.get("tls", 0),
        }
    entry = {"host_id": state.get("host_id"), "state_dir": os.path.realpath(sdir), "devices": devices}
    _atomic_write(os.path.join(fabric, fabric_key(sdir) + FABRIC_SUFFIX), marshal.dumps(entry, MARSHAL_VERSION))


def unpublish(sdir: str, state: dict) -> None:
    if state.get("mode") == "fabric" and state.get("fabric"):
        try:
            os.unlink(os.path.join(state["fabric"], fabric_key(sdir) + FABRIC_SUFFIX))
        except FileNotFoundError:
            pass


def update(sdir, func):
    """Run ``func(state)`` under the writer lock on a fresh copy and save it; return its result."""
    with locked(sdir):
        state = read_json(sdir)
        result = func(state)
        write(sdir, state)
        return result
