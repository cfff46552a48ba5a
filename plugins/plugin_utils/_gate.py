# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""How far ahead the launch puts the common start time: derived from the play's size and a measured round trip.

Once every rank is staged the controller picks ``T = now + margin`` and writes ``T`` (in each server's own
clock) to every server's gate file, one shell command per server (``_job_files.gate_command``). Every rank
sleeps until ``T``; a server whose gate arrives after ``T`` starts at once, late by that much. So the margin
must cover the gate's distribution to the last server:

- ``BASE_S`` (0.2 s): from picking ``T`` to the gate task's first command (one task boundary, 0.07-0.08 s
  measured on the test bed at load 6-12). Measured whole, pick to the last server's gate file: 0.05-0.08 s
  at 2 servers and 0.46 s at 8 servers on 2 cores (load 4; the gate files' mtimes against ``T``), so 0.5 s
  kept the ranks waiting 0.7 s for nothing at 2 servers;
- per batch of ``forks`` servers, ``PER_BATCH_S`` (0.25 s: the whole gate task took 0.07-0.24 s for two
  servers at load 6-15) plus two round trips of the slowest server's measured clock reading (its ``rtt``:
  the gate is one command over the same connection);
- but never less than the controller's CPU for every server's gate task, ``PER_SERVER_CPU_S`` (0.1 CPU-s: a
  worker, the task's templating, one ``ssh`` command) spread over the controller's cores;
- all of it stretched by the controller's load: every step above waits for a CPU. Up to ``LOAD_PER_CORE`` (2)
  runnable processes per core the figures above hold (they were measured at load 4-15 on 2 cores); above it the
  margin grows in proportion (load average over the last minute / (2 x cores)). Measured: in a whole ``make test``
  (load 15-25 on 2 cores) the unstretched 0.47 s at 2 servers left one server's ranks 0.67 s late.

``docs/launch.md`` ("Why the launch stays inside HCCL_CONNECT_TIMEOUT") works it out at 1000 servers.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from typing import Any

from ansible_collections.ascend.cluster.plugins.plugin_utils._errors import ClusterSpecError

BASE_S = 0.2
PER_BATCH_S = 0.25
PER_SERVER_CPU_S = 0.1
# A round trip assumed where none was measured (no pre-flight clock reading yet): a slow LAN.
UNMEASURED_RTT_S = 0.05
LOAD_PER_CORE = 2.0


def _positive_int(value: Any, what: str) -> int:
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise ClusterSpecError(f"{what} must be a whole number, got {value!r}") from None
    if number < 1:
        raise ClusterSpecError(f"{what} must be at least 1, got {number}")
    return number


def slowest_rtt(clocks: Any) -> float:
    """The largest ``rtt`` among the pre-flight's clock readings (``UNMEASURED_RTT_S`` when there is none)."""
    if clocks is None:
        return UNMEASURED_RTT_S
    if isinstance(clocks, (str, Mapping)) or not isinstance(clocks, Sequence):
        raise ClusterSpecError(f"clocks must be a list of clock readings ({{server, rtt, ...}}), got {type(clocks).__name__}")
    rtts = []
    for clock in clocks:
        if isinstance(clock, Mapping) and clock.get("rtt") is not None:
            try:
                rtts.append(float(clock["rtt"]))
            except (TypeError, ValueError):
                raise ClusterSpecError(f"a clock reading's rtt is not a number: {clock!r}") from None
    return max(rtts) if rtts else UNMEASURED_RTT_S


def load_factor(load: Any, cpus: int) -> float:
    """How much a controller this loaded stretches the gate's distribution: 1 up to LOAD_PER_CORE per core."""
    try:
        value = float(load)
    except (TypeError, ValueError):
        raise ClusterSpecError(f"load must be a number (a load average), got {load!r}") from None
    if value < 0:
        raise ClusterSpecError(f"load must be 0 or more, got {value:g}")
    return max(1.0, value / (LOAD_PER_CORE * cpus))


def gate_margin(servers: Any, forks: Any, clocks: Any = None, cores: Any = None, load: Any = None) -> float:
    """Seconds between opening the gate and the common start time for ``servers`` gated ``forks`` at a time.

    ``clocks``: the pre-flight's clock readings (each with its ``rtt``); ``cores``: the controller's CPUs
    (default: this machine's); ``load``: its load average (default: this machine's over the last minute).
    """
    count = _positive_int(servers, "servers")
    batches = math.ceil(count / _positive_int(forks, "forks"))
    cpus = _positive_int(cores if cores is not None else (os.cpu_count() or 1), "cores")
    by_batches = batches * (PER_BATCH_S + 2 * slowest_rtt(clocks))
    by_cpu = count * PER_SERVER_CPU_S / cpus
    stretch = load_factor(load if load is not None else os.getloadavg()[0], cpus)
    return round(stretch * (BASE_S + max(by_batches, by_cpu)), 3)
