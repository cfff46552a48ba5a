# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which TCP ports something already listens on, and who: from /proc/net/tcp{,6} and /proc/<pid>/fd.

HCCL listens on its host ports (``HCCL_IF_BASE_PORT``, 60000 by default, 16 or 32 of them) and the
framework on its master port; a port already taken ends the job in EI0019 ("listen on ip[...] and
specific port[...] fail"). The pre-flight asks before anything starts.

Runs on target hosts: Python 3.8+, stdlib only.
"""

from __future__ import annotations

import os
import re
import time

UNOWNED_SETTLE_S = 0.5
LISTEN = "0A"  # the st column of /proc/net/tcp for a listening socket
TABLES = ("/proc/net/tcp", "/proc/net/tcp6")


def parse_listening(text: str) -> dict:
    """``{port: inode}`` of the LISTEN rows of one /proc/net/tcp-style table."""
    found: dict = {}
    for line in text.splitlines()[1:]:
        fields = line.split()
        if len(fields) < 10 or fields[3] != LISTEN or ":" not in fields[1]:
            continue
        try:
            port = int(fields[1].rsplit(":", 1)[1], 16)
        except ValueError:
            continue
        found.setdefault(port, fields[9])
    return found


def socket_owners(inodes: set, proc: str = "/proc") -> dict:
    """``{inode: "pid N (name)"}`` for the sockets in ``inodes`` that a process we can see holds."""
    owners: dict = {}
    if not inodes:
        return owners
    for pid in (entry for entry in os.listdir(proc) if entry.isdigit()):
        fd_dir = os.path.join(proc, pid, "fd")
        try:
            fds = os.listdir(fd_dir)
        except OSError:
            continue  # gone, or not ours to read
        for fd in fds:
            try:
                link = os.readlink(os.path.join(fd_dir, fd))
            except OSError:
                continue  # closed meanwhile (the listing's own descriptor, for one)
            if link.startswith("socket:[") and link[8:-1] in inodes and link[8:-1] not in owners:
                try:
                    with open(os.path.join(proc, pid, "comm")) as handle:
                        name = handle.read().strip()
                except OSError:
                    name = "?"
                owners[link[8:-1]] = "pid %s (%s)" % (pid, name)
    return owners


def owner_pid(who: str) -> int | None:
    """The pid in a holder as :func:`ports_in_use` names it (``pid 1234 (nc)``), None for "a socket"."""
    found = re.match(r"pid (\d+) ", who + " ")
    return int(found.group(1)) if found else None


def ports_in_use(ports: list, tables: tuple = TABLES, proc: str = "/proc", settle: float = UNOWNED_SETTLE_S) -> dict:
    """``{port: who}`` for each of ``ports`` some socket listens on (``who``: "pid N (name)" or "a socket").

    A listening socket no process holds (its process exiting between the two reads) is looked at again after ``settle``
    seconds and counted only when it still listens: a job's coordinator that has just ended is not "a socket" in the way.
    """
    wanted = set(int(port) for port in ports)
    listening: dict = {}
    for table in tables:
        try:
            with open(table) as handle:
                text = handle.read()
        except OSError:
            continue
        for port, inode in parse_listening(text).items():
            if port in wanted:
                listening.setdefault(port, inode)
    owners = socket_owners(set(listening.values()), proc)
    found = {port: owners.get(inode, "a socket") for port, inode in sorted(listening.items())}
    unowned = [port for port, inode in listening.items() if inode not in owners]
    if unowned and settle > 0:  # a listener whose process is exiting right now has no owner any more: look once more
        time.sleep(settle)
        again = ports_in_use(unowned, tables, proc, settle=0)
        found = dict((port, again.get(port, who)) for port, who in found.items() if port not in unowned or port in again)
    return found
