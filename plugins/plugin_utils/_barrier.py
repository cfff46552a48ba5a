# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A barrier between the workers of one ``ansible-playbook`` run: every host's task waits for all.

The launch's staging wait runs once per server, each in its own worker. Without a barrier a server
whose ranks have all staged ends its task, and its worker exits; a Ctrl-C after that reaches only
the workers still waiting, so the finished servers' staged runners would hold their devices until
the gate time-out. With it, every server's staging wait lasts until every server's has ended, so a
Ctrl-C finds a worker for each server and releases them all.

The workers of one run share the controller and its per-run local temporary directory (Ansible's
``DEFAULT_LOCAL_TMP``, made once by the main process before it forks them): each host drops a marker
file there when its own part has ended, whatever the outcome, and waits until every host's marker
is there. Workers run at once only when ``forks`` is at least the number of hosts; with fewer, the
later batches would never arrive in time, so the barrier is not used (``applies``).
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Sequence


def applies(hosts: Sequence[str], forks: int | None) -> bool:
    """A barrier over ``hosts`` can complete only when every host's worker runs at the same time."""
    return len(hosts) > 1 and forks is not None and forks >= len(hosts)


def path(local_tmp: str, name: str) -> str:
    """The barrier's directory under the run's local temporary directory (``name`` made file-name safe)."""
    return os.path.join(local_tmp, "ascend-barrier-" + re.sub(r"[^A-Za-z0-9_.-]", "_", name))


def _marker(directory: str, host: str) -> str:
    return os.path.join(directory, re.sub(r"[^A-Za-z0-9_.-]", "_", host) or "_")


def arrive(directory: str, host: str) -> None:
    """Mark ``host``'s part as ended (idempotent)."""
    os.makedirs(directory, mode=0o700, exist_ok=True)
    with open(_marker(directory, host), "w", encoding="utf-8"):
        pass


def missing(directory: str, hosts: Sequence[str]) -> list:
    """The hosts whose part has not ended yet."""
    return [host for host in hosts if not os.path.exists(_marker(directory, host))]


def wait(
    directory: str,
    hosts: Sequence[str],
    timeout: float,
    interval: float = 0.1,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> list:
    """Wait up to ``timeout`` seconds for every host to arrive; the hosts still missing ([] when all came)."""
    deadline = clock() + timeout
    while True:
        late = missing(directory, hosts)
        if not late or clock() >= deadline:
            return late
        sleep(interval)
