"""CPU seconds of the processes a benchmark started and waited for (ansible-playbook, its workers, local modules)."""

from __future__ import annotations

import resource


def children_cpu() -> float:
    """User + system seconds of every child waited for so far; a figure is the difference of two readings."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime
