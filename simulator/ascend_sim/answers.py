"""Pre-rendered answers of the get commands that depend only on the state file (the fast path).

Every state write (``store.write``, under the writer lock) renders, for every device, the answer
of each command in ``commands(state)`` by running ``hccn.run`` itself, so the bytes are the
simulator's by construction. The installed ``hccn_tool`` wrapper (``admin.WRAPPER``, POSIX sh)
answers ``-i ID CMD -g`` from them without starting Python, and falls back to the simulator for
anything else, including a state.json that differs from the copy the answers were rendered from
(hand edits, a write in progress).

Layout in the state directory::

    answers -> answers.<n>          symlink, swapped atomically (temporary symlink + rename)
    answers.<n>/state.json          the exact state.json bytes the answers belong to
    answers.<n>/<id>                per command: "<cmd> <rc> <latency> <stdout lines> <stderr lines>\n",
                                    then those stdout lines, then those stderr lines

``<cmd>`` is the command without its dash (``ip``, ``gateway``, ...); ``<latency>`` is what the
call sleeps before answering (``0`` for none, else seconds with 9 decimals). An answer is only
written when its exit status is below ``FALLBACK_RC`` and its stdout/stderr are whole lines
without NUL bytes, because the wrapper reproduces them line by line with shell builtins. One
file per device (not per command) keeps a state write at ~20 small files.
"""

from __future__ import annotations

import math
import os
import shutil

from ._rt import STATE_FILE, SimError, load

LINK = "answers"
PREFIX = "answers."
KEEP_OLD = 2  # previous generations kept for readers that are still inside one
FALLBACK_RC = 254  # the wrapper's private "not answered, run the simulator" status
STATIC = ("-ip", "-gateway", "-netdetect", "-mac", "-tls")


def commands(state: dict) -> tuple:
    """The get commands whose answer is a pure function of the state file in this mode."""
    if state.get("mode") == "bed":
        return STATIC  # bed mode: -link -g reads the real interface's sysfs
    return STATIC + ("-link",)


def _lines_ok(text):
    return "\0" not in text and (text == "" or text.endswith("\n"))


def render_one(sdir: str, state: dict, dev_id: str, cmd: str, latency: str) -> str | None:
    """The answer record of ``hccn_tool -i dev_id cmd -g``, or None when it cannot be cached."""
    from . import hccn

    out = hccn.Out()
    try:
        rc = hccn.run(["-i", dev_id, cmd, "-g"], sdir, out, no_latency=True, state=state)
    # Anything the simulator itself would die of (e.g. a hand-edited device without "mac") is
    # left to the simulator: no answer, the wrapper falls back.
    except Exception:  # pylint: disable=broad-except
        return None
    stdout, stderr = "".join(out.out), "".join(out.err)
    if not 0 <= rc < FALLBACK_RC or not _lines_ok(stdout) or not _lines_ok(stderr):
        return None
    return "%s %d %s %d %d\n%s%s" % (cmd[1:], rc, latency, stdout.count("\n"), stderr.count("\n"), stdout, stderr)


def _generations(sdir):
    found = []
    for name in os.listdir(sdir):
        if name.startswith(PREFIX) and name[len(PREFIX) :].isdigit():
            found.append(int(name[len(PREFIX) :]))
    return sorted(found)


def _write(path, text):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        data = memoryview(text.encode("utf-8"))
        while data:
            data = data[os.write(fd, data) :]
    finally:
        os.close(fd)


def _drop_link(sdir):
    try:
        os.unlink(os.path.join(sdir, LINK))
    except FileNotFoundError:
        pass


def render(sdir: str) -> bool:
    """Render a new generation for the current state of ``sdir``; caller holds the writer lock.

    Returns False (and removes the ``answers`` link, so every call runs the simulator) when the
    state cannot be rendered; never raises for a problem of the cache itself.
    """
    from . import hccn

    try:
        with open(os.path.join(sdir, STATE_FILE), "rb") as f:
            state_bytes = f.read()
        state = load(sdir)
        seconds = hccn.state_latency(state)
    except (OSError, SimError, ValueError, TypeError):
        _drop_link(sdir)
        return False
    if math.isnan(seconds) or math.isinf(seconds):
        _drop_link(sdir)
        return False
    latency = "%.9f" % seconds if seconds > 0 else "0"
    old = _generations(sdir)
    gen = os.path.join(sdir, "%s%d" % (PREFIX, (old[-1] + 1) if old else 1))
    try:
        os.mkdir(gen, 0o755)
        with open(os.path.join(gen, STATE_FILE), "wb") as f:
            f.write(state_bytes)
        for dev_id in state.get("devices") or {}:
            if not (dev_id.isascii() and dev_id.isdigit() and len(dev_id) <= 2 and str(int(dev_id)) == dev_id):
                continue  # the wrapper only looks up canonical ids; hand-edited oddities run the simulator
            records = [render_one(sdir, state, dev_id, cmd, latency) for cmd in commands(state)]
            _write(os.path.join(gen, dev_id), "".join(r for r in records if r is not None))
        tmp = os.path.join(sdir, "%s.tmp.%d" % (LINK, os.getpid()))
        if os.path.lexists(tmp):
            os.unlink(tmp)
        os.symlink(os.path.basename(gen), tmp)
        os.replace(tmp, os.path.join(sdir, LINK))
    except OSError:
        _drop_link(sdir)
        shutil.rmtree(gen, ignore_errors=True)
        return False
    for number in old[:-KEEP_OLD] if len(old) > KEEP_OLD else ():
        shutil.rmtree(os.path.join(sdir, "%s%d" % (PREFIX, number)), ignore_errors=True)
    return True


def ensure(sdir: str) -> None:
    """Render when the state has no answers yet (a state written before the fast path existed)."""
    if not os.path.lexists(os.path.join(sdir, LINK)):
        render(sdir)
