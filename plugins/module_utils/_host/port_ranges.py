# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Port ranges merged and written as the kernel and the messages show them (the firewall's reservation, the packet
filter's findings). Runs on target hosts: Python 3.8+, stdlib only."""

from __future__ import annotations

from typing import Iterable


def merge_ranges(ranges: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """Sorted, with overlapping and adjacent ranges joined: how the kernel prints the list back."""
    merged: list[tuple[int, int]] = []
    for low, high in sorted(ranges):
        if merged and low <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(high, merged[-1][1]))
        else:
            merged.append((low, high))
    return merged


def format_ranges(ranges: Iterable[tuple[int, int]], sep: str = ",") -> str:
    """``[(16666, 16666), (60000, 60002)]`` -> ``16666,60000-60002`` (the kernel's list; ``sep=", "`` for a message)."""
    return sep.join(str(low) if low == high else "%d-%d" % (low, high) for low, high in ranges)
