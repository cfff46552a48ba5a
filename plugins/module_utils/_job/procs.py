# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Signal and watch process groups (a rank's training command runs in its own session).

Runs on target hosts: Python 3.8+, stdlib only.
"""

from __future__ import annotations

import os
import signal
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # types only
    from typing import Callable

POLL_S = 0.05

# What a death by a signal that ascend.cluster did not send most likely means.
SIGNAL_HINTS: dict[int, str] = {
    signal.SIGKILL: "the OOM killer?",
    signal.SIGSEGV: "a segmentation fault in the training or a library it loads",
    signal.SIGBUS: "a bus error (a truncated memory-mapped file, bad memory?)",
    signal.SIGABRT: "the training called abort() (a failed assertion in native code?)",
}


def signal_name(signum: int) -> str:
    """``SIGKILL`` for 9; ``signal 64`` for a number Python does not name."""
    try:
        return signal.Signals(signum).name
    except ValueError:
        return "signal %d" % signum


def signal_death(rc: object, sent_by_us: bool = False) -> str | None:
    """How a rank that ended with ``rc`` (negative: killed by that signal, as Popen reports it) died.

    None for an exit code; with ``sent_by_us`` False the text says the signal was not ours and
    gives the likely sender: ``killed by SIGKILL (signal 9) - not sent by ascend.cluster; the OOM killer?``.
    """
    if not isinstance(rc, int) or rc >= 0:
        return None
    signum = -rc
    name = signal_name(signum)
    text = "killed by %s (signal %d)" % (name, signum) if name.startswith("SIG") else "killed by " + name
    if sent_by_us:
        return text
    hint = SIGNAL_HINTS.get(signum)
    return text + " - not sent by ascend.cluster" + ("; " + hint if hint else "")


def _zombie(pid: int) -> bool:
    """True when ``pid`` has exited and only waits to be reaped by its parent (Linux /proc)."""
    return stat_fields(pid)[:1] == ["Z"]


def _signal_0(send: Callable[[int, int], None], target: int) -> bool | None:
    """Signal 0 through ``send`` (``os.kill`` or ``os.killpg``): False when no such process (group) exists, None
    when it exists but is another user's (it counts as alive, not looked at closer), True when it is ours and
    exists - zombies included: the callers read /proc for those."""
    try:
        send(int(target), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return None
    return True


def pid_alive(pid: int | None) -> bool:
    """True when a process ``pid`` exists and has not exited (a zombie counts as gone)."""
    if not pid:
        return False
    found = _signal_0(os.kill, pid)
    return True if found is None else found and not _zombie(int(pid))


def stat_fields(pid: int | str) -> list:
    """``/proc/<pid>/stat`` after the command name: state, ppid, pgrp, ... ([] when unreadable)."""
    try:
        with open("/proc/%s/stat" % pid) as handle:
            return handle.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return []


def tree_pids(root: int) -> list:
    """``root`` and every live descendant of it, parents first (Linux ``/proc/<pid>/task/<tid>/children``; a kernel
    without those files: one scan of ``/proc`` for the parent of each process). [] when ``root`` is gone."""
    if not os.path.isdir("/proc/%d/task" % int(root)):
        return []
    found: list = []
    todo = [int(root)]
    scanned: dict | None = None
    while todo:
        pid = todo.pop(0)
        found.append(pid)
        try:
            tids = os.listdir("/proc/%d/task" % pid)
        except OSError:
            continue
        children: list = []
        readable = True
        for tid in tids:
            try:
                with open("/proc/%d/task/%s/children" % (pid, tid)) as handle:
                    children += [int(word) for word in handle.read().split()]
            except FileNotFoundError:
                readable = False
                break
            except OSError:
                continue
        if not readable:
            if scanned is None:
                scanned = {}
                for name in os.listdir("/proc"):
                    fields = stat_fields(name) if name.isdigit() else []
                    if len(fields) > 1:
                        scanned.setdefault(int(fields[1]), []).append(int(name))
            children = scanned.get(pid, [])
        todo += [child for child in children if child not in found and child not in todo]
    return found


def _only_zombies(pgid: int) -> bool:
    """True when every process of group ``pgid`` found in /proc has exited and waits to be reaped.

    A training killed while its runner could not reap it (a host going down, a runner killed -9)
    stays a zombie until its new parent reaps it: its group still answers signals, but it is gone.
    """
    try:
        entries = os.listdir("/proc")
    except OSError:
        return False
    found = False
    for name in entries:
        if name.isdigit():
            fields = stat_fields(name)
            if len(fields) > 2 and fields[2] == str(pgid):
                if fields[0] != "Z":
                    return False
                found = True
    return found


def group_alive(pgid: int | None) -> bool:
    """True while any process of the group ``pgid`` exists and has not exited (zombies count as gone)."""
    if not pgid:
        return False
    found = _signal_0(os.killpg, pgid)
    if found is not True:
        return found is None
    leader = stat_fields(pgid)  # the group's leader still running and in it: alive, without reading all of /proc
    if len(leader) > 2 and leader[0] != "Z" and leader[2] == str(pgid):
        return True
    return not _only_zombies(int(pgid))


def _signal_group(pgid: int, signum: int) -> None:
    try:
        os.killpg(int(pgid), signum)
    except (ProcessLookupError, PermissionError):
        pass


def kill_groups(pgids: list, grace: float | None = None) -> dict:
    """TERM every group; after ``grace`` seconds KILL those still alive.

    Returns ``{"terminated": [...], "killed": [...]}`` (the groups that needed SIGKILL are in
    ``killed``). With ``grace`` None only SIGTERM is sent and nothing is awaited.
    """
    live = [int(g) for g in pgids if group_alive(g)]
    for pgid in live:
        _signal_group(pgid, signal.SIGTERM)
    if grace is None:
        return {"terminated": live, "killed": []}
    deadline = time.time() + grace
    remaining = list(live)
    while remaining and time.time() < deadline:
        time.sleep(POLL_S)
        remaining = [g for g in remaining if group_alive(g)]
    for pgid in remaining:
        _signal_group(pgid, signal.SIGKILL)
    deadline = time.time() + 5.0
    while time.time() < deadline and any(group_alive(g) for g in remaining):
        time.sleep(POLL_S)
    return {"terminated": live, "killed": remaining}


def kill_group(pgid: int, signum: int = signal.SIGTERM, grace: float | None = None) -> None:
    """Send ``signum`` to one group; with ``grace``, SIGKILL it if it outlives that."""
    if signum != signal.SIGTERM:
        _signal_group(pgid, signum)
        return
    kill_groups([pgid], grace)


def wait_gone(pids: list, timeout: float) -> list:
    """Wait up to ``timeout`` s for ``pids`` to exit; the ones still alive."""
    deadline = time.time() + timeout
    remaining = [p for p in pids if pid_alive(p)]
    while remaining and time.time() < deadline:
        time.sleep(POLL_S)
        remaining = [p for p in remaining if pid_alive(p)]
    return remaining
