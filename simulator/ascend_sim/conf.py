"""``/etc/hccn.conf`` the way hccn_tool handles it.

One ``key_<phy_id>=value`` per line. On every set, hccn_tool takes an exclusive ``flock`` on the
file, deletes the existing line of each key it writes and appends the new line at the end, so
the order of keys drifts. The file is kept at mode 0640.
"""

from __future__ import annotations

import fcntl
import os

CONF_MODE = 0o640


def _key_of(line: str) -> str:
    return line.split("=", 1)[0].strip()


def _rewrite(path, edit):
    """Lock ``path`` (created 0640 if missing), apply ``edit(lines)`` and rewrite it in place."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, CONF_MODE)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        chunks = []
        while True:
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            chunks.append(chunk)
        lines = b"".join(chunks).decode("utf-8", "replace").splitlines()
        lines = edit(lines)
        data = ("\n".join(lines) + "\n" if lines else "").encode("utf-8")
        os.lseek(fd, 0, os.SEEK_SET)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.ftruncate(fd, len(data))
        os.fchmod(fd, CONF_MODE)
        os.fsync(fd)
    finally:
        os.close(fd)  # releases the flock


def set_keys(path: str, items: list) -> None:
    """For each ``(key, value)`` in order: delete the key's line(s), append ``key=value``."""

    def edit(lines):
        for key, value in items:
            lines = [line for line in lines if _key_of(line) != key]
            lines.append("%s=%s" % (key, value))
        return lines

    _rewrite(path, edit)


def delete_keys(path: str, keys: list) -> None:
    drop = set(keys)
    _rewrite(path, lambda lines: [line for line in lines if _key_of(line) not in drop])


def read(path: str) -> dict:
    """The conf file as a dict (later lines win), {} when it does not exist."""
    values = {}
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                line = line.strip()
                if not line or line.startswith("#") or "=" not in line:
                    continue
                key, value = line.split("=", 1)
                values[key.strip()] = value.strip()
    except FileNotFoundError:
        pass
    return values


def ensure(path: str) -> None:
    """Create an empty conf file (mode 0640) if there is none."""
    parent = os.path.dirname(path)
    if parent:
        os.makedirs(parent, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, CONF_MODE)
    try:
        os.fchmod(fd, CONF_MODE)
    finally:
        os.close(fd)
