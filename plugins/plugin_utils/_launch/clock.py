# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A server's wall-clock offset against the controller, and what the launch does about it.

The gate is one absolute start time; a server whose clock is behind starts its ranks late by
exactly that much (and HCCL gives up after ``HCCL_CONNECT_TIMEOUT``). So the pre-flight reads
the server's clock a few times over the existing connection and keeps the reading with the
smallest round trip, NTP-style: ``offset = server_time - (t_send + t_recv) / 2``; the true
offset lies within ``rtt / 2`` of it (the server read its clock somewhere inside the round trip).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

CHRONY_HINT = (
    "keep the clocks in sync: install and enable chrony (or ntpd) on every server and the controller, "
    "pointed at the same time source (`chronyc tracking` shows the offset)"
)


DATE = "date +%s.%N"
# Where date has no %N (it prints "1700000000.N"): the server's Python, which Ansible needs anyway.
PYTHON = "{python} -c 'import time; print(repr(time.time()))'"


class Sample(NamedTuple):
    """One reading: the controller's clock when the request left and when the answer came back, the server's in between."""

    t_send: float
    server_time: float
    t_recv: float


class Offset(NamedTuple):
    """The server's clock minus the controller's (seconds); the true value lies within ``uncertainty``."""

    offset: float
    uncertainty: float
    rtt: float
    samples: int


class Verdict(NamedTuple):
    """``ok``, ``warn`` or ``refuse``, and the sentence for the operator (empty when ``ok``)."""

    status: str
    msg: str


def best_offset(samples: Sequence[Sample]) -> Offset:
    """The offset from the sample with the smallest round trip (NTP's clock filter, in one line)."""
    usable = [s for s in samples if s.t_recv >= s.t_send]
    if not usable:
        raise ValueError(f"no usable clock sample among {len(samples)} (each needs t_recv >= t_send)")
    best = min(usable, key=lambda s: s.t_recv - s.t_send)
    rtt = best.t_recv - best.t_send
    return Offset(best.server_time - (best.t_send + best.t_recv) / 2.0, rtt / 2.0, rtt, len(usable))


def describe(offset: float) -> str:
    """``30.012 s behind`` / ``2.500 s ahead of``, as in "the clock of h2 is ... the controller"."""
    return f"{abs(offset):.3f} s {'behind' if offset < 0 else 'ahead of'}"


def judge(server: str, measured: Offset, warn_above: float, refuse_above: float, allow: bool) -> Verdict:
    """Warn above ``warn_above`` seconds; refuse above ``refuse_above`` unless ``allow``."""
    size = abs(measured.offset)
    where = f"the clock of {server} is {describe(measured.offset)} the controller (+/- {measured.uncertainty:.3f} s)"
    if size > refuse_above:
        if allow:
            return Verdict(
                "warn",
                f"{where}, more than {refuse_above:g} s (a quarter of HCCL_CONNECT_TIMEOUT); launching anyway as "
                f"ascend_launch_allow_clock_skew is set: the gate corrects it, but the logs' timestamps will disagree. Fix: {CHRONY_HINT}",
            )
        return Verdict(
            "refuse",
            f"{where}, more than {refuse_above:g} s (a quarter of HCCL_CONNECT_TIMEOUT): a cluster whose clocks disagree this "
            f"much also has logs no one can line up across servers, and its ranks would start late by that much without the "
            f"gate's correction. Fix: {CHRONY_HINT}; or set ascend_launch_allow_clock_skew=true to launch anyway",
        )
    if size > warn_above:
        return Verdict("warn", f"{where}, more than {warn_above:g} s: the gate corrects it, but fix it: {CHRONY_HINT}")
    return Verdict("ok", "")


def read_sample(run: Callable[[str], Mapping[str, Any]], command: str) -> Sample:
    """One reading with ``command`` through ``run`` (an action's low-level command: -> rc, stdout, stderr), timed here."""
    t_send = time.time()
    res = run(command)
    t_recv = time.time()
    out = str(res.get("stdout") or "").strip()
    try:
        if res.get("rc") != 0:
            raise ValueError(f"exit code {res.get('rc')}")
        return Sample(t_send, float(out), t_recv)
    except ValueError as exc:
        raise ValueError(f"`{command}` gave {out!r} ({exc}; stderr {str(res.get('stderr') or '').strip()!r})") from exc


def read_offset(run: Callable[[str], Mapping[str, Any]], samples: int, python: str = "python3") -> Offset:
    """``samples`` readings (``date``, or the server's ``python`` where date has no %N), the best kept.

    Raises ValueError (naming the command and what it printed) when the clock cannot be read.
    """
    if samples < 1:
        raise ValueError(f"samples must be 1 or more, not {samples}")
    command = DATE
    readings = []
    for _reading in range(samples):
        try:
            readings.append(read_sample(run, command))
        except ValueError:
            if command != DATE:
                raise
            command = PYTHON.format(python=python)
            readings.append(read_sample(run, command))
    return best_offset(readings)


def measure(
    run: Callable[[str], Mapping[str, Any]],
    server: str,
    samples: int,
    warn_above: float,
    refuse_above: float,
    allow: bool,
    python: str = "python3",
) -> dict[str, Any]:
    """Read and judge a server's clock: the result ``clock_offset`` returns (``failed`` when it cannot be read)."""
    try:
        measured = read_offset(run, samples, python)
    except ValueError as exc:
        return {"failed": True, "server": server, "msg": f"cannot read the clock of {server}: {exc}"}
    verdict = judge(server, measured, warn_above, refuse_above, allow)
    return {
        "server": server,
        "offset": round(measured.offset, 4),
        "uncertainty": round(measured.uncertainty, 4),
        "rtt": round(measured.rtt, 4),
        "samples": measured.samples,
        "status": verdict.status,
        "msg": verdict.msg,
    }


def measure_over(
    action: Any, task_vars: Mapping[str, Any], samples: int, warn_above: float, refuse_above: float, allow: bool, server: str | None = None
) -> dict[str, Any]:
    """:func:`measure` over an action plugin's connection (one ``date`` per sample, no module), for ``task_vars``'s host."""
    return measure(
        lambda command: action._low_level_execute_command(command, sudoable=False),  # pylint: disable=protected-access
        server or str(task_vars.get("inventory_hostname", "?")),
        samples,
        warn_above,
        refuse_above,
        allow,
        python=task_vars.get("ansible_python_interpreter") or "python3",
    )
