# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pick ``np`` devices for a job out of the devices the servers have available.

Rules (reference section 3, "Device-count rules"):

- the same number of devices ``k`` on each server used, ``np = k x n``;
- whole servers first: the largest ``k`` that works, so the job spans the fewest servers
  (``spread=True``: the smallest ``k`` over the most servers instead, e.g. np=8 on 2 x 8 -> 4 + 4);
- 910A: one server runs 1, 2, 4 or 8 devices, a 2- or 4-device set stays inside one HCCS ring
  ({0-3} or {4-7}); several servers run 8 devices each (1/2/4 x N with ``allow_partial_servers``);
- A2/A3: any 1..16 devices per server.

Servers are used in the order given; within a server the lowest device ids are taken.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from ansible_collections.ascend.cluster.plugins.module_utils._npu.chip import ChipProfile
from ansible_collections.ascend.cluster.plugins.plugin_utils._errors import ClusterSpecError
from ansible_collections.ascend.cluster.plugins.plugin_utils._rank.chip_rules import (
    SINGLE_SERVER_COUNTS_910A,
    PartialServersRefusal,
    device_id_of,
    is_decimal,
    resolve_chip,
)

_SHOWN_COUNTS = 24


class Candidate(NamedTuple):
    """A server offering devices: the input mapping, its free device ids (sorted), each id's entry."""

    server: Mapping
    ids: list[int]
    by_id: dict[int, Any]


def _pick(profile: ChipProfile | None, ids: list[int], k: int) -> list[int] | None:
    """The ``k`` devices to use out of the sorted available ``ids``, or None if the chip forbids it."""
    if len(ids) < k:
        return None
    if profile is not None and profile.hccs_rings and k in (2, 4):
        for ring in profile.hccs_rings:
            inside = [i for i in ids if i in ring]
            if len(inside) >= k:
                return inside[:k]
        return None
    return ids[:k]


def _per_server_counts(profile: ChipProfile | None, largest: int, multi: bool, allow_partial: bool) -> list[int]:
    """Device counts per server the chip allows, largest first."""
    if profile is not None and profile.hccs_rings:
        full = sum(len(ring) for ring in profile.hccs_rings)
        allowed = SINGLE_SERVER_COUNTS_910A if (not multi or allow_partial) else (full,)
        return sorted((k for k in allowed if k <= largest), reverse=True)
    return list(range(largest, 0, -1))


def read_available(servers: Any, profile: ChipProfile | None) -> list[Candidate]:
    """The servers (as gathered by hccn_facts) and their free devices, checked against the chip."""
    if isinstance(servers, (str, Mapping)) or not isinstance(servers, Sequence):
        raise ClusterSpecError("the input must be a list of servers ({server_id, devices}) as gathered by hccn_facts")
    result = []
    for index, server in enumerate(servers):
        if not isinstance(server, Mapping) or "server_id" not in server:
            raise ClusterSpecError(f"server #{index} needs server_id and devices, got {server!r}")
        where = f"server {server['server_id']}"
        devices = server.get("devices") or []
        if isinstance(devices, (str, Mapping)) or not isinstance(devices, Sequence):
            raise ClusterSpecError(f"{where}: devices must be a list, got {devices!r}")
        by_id: dict[int, Any] = {}
        for device in devices:
            if not isinstance(device, Mapping):
                raise ClusterSpecError(f"{where}: a device must be a mapping with device_id, got {device!r}")
            by_id[device_id_of(device.get("device_id"), where, profile)] = device
        result.append(Candidate(server, sorted(by_id), by_id))
    return result


def _np_of(np: Any) -> int:
    if isinstance(np, bool) or not (isinstance(np, int) or (isinstance(np, str) and is_decimal(np.strip()))):
        raise ClusterSpecError(f"np must be a positive whole number of devices, got {np!r}")
    value = int(np)
    if value < 1:
        raise ClusterSpecError(f"np must be at least 1, got {value}")
    return value


def possible_counts(profile: ChipProfile | None, available: list[Candidate], allow_partial: bool) -> list[int]:
    """Every np this set of servers can run, smallest first."""
    largest = max((len(c.ids) for c in available), default=0)
    counts: set[int] = set()
    for multi in (False, True):
        for k in _per_server_counts(profile, largest, multi, allow_partial):
            capable = sum(1 for c in available if _pick(profile, c.ids, k) is not None)
            if multi:
                counts.update(k * n for n in range(2, capable + 1))
            elif capable:
                counts.add(k)
    return sorted(counts)


def _layouts(profile: ChipProfile | None, wanted: int, largest: int, servers: int, allow_partial: bool, spread: bool):
    """``(k, n)`` pairs (k devices on each of n servers, k x n = wanted) in order of preference.

    Packed (default): fewest servers first. Spread: most servers first (at most ``servers``).
    """
    layouts = []
    for multi in (False, True):
        for k in _per_server_counts(profile, largest, multi, allow_partial):
            n, rest = divmod(wanted, k)
            if not rest and (n > 1) == multi:
                layouts.append((k, n))
    if spread:
        layouts = sorted((pair for pair in layouts if pair[1] <= servers), key=lambda pair: -pair[1])
    return layouts


def select_devices(servers: Any, np: Any, chip: str | None = None, allow_partial_servers: bool = False, spread: bool = False) -> list[dict]:
    """The subset of ``servers`` (same shape, other keys kept) that runs an ``np``-device job.

    ``spread``: use as many servers as the chip rules allow, the same count on each (np=8 on
    two 8-device servers: 4 + 4), instead of filling whole servers first.
    """
    profile = resolve_chip(chip)
    wanted = _np_of(np)
    if not isinstance(spread, bool):
        raise ClusterSpecError(f"spread must be true or false, got {spread!r}")
    available = read_available(servers, profile)
    largest = max((len(c.ids) for c in available), default=0)
    for k, n in _layouts(profile, wanted, largest, len(available), allow_partial_servers, spread):
        chosen = []
        for candidate in available:
            picked = _pick(profile, candidate.ids, k)
            if picked is not None:
                chosen.append(subset(candidate, picked))
                if len(chosen) == n:
                    return chosen
    counts = possible_counts(profile, available, allow_partial_servers)
    shown = ", ".join(str(c) for c in counts[:_SHOWN_COUNTS]) + (f", ... {counts[-1]}" if len(counts) > _SHOWN_COUNTS else "")
    per_server = ", ".join(f"{c.server['server_id']}: {len(c.ids)}" for c in available) or "none"
    chip_text = f"{profile.name} " if profile else ""
    refusal = f"np={wanted} is not possible with the available {chip_text}devices (per server: {per_server}): possible np values are {shown or 'none'}"
    if allow_partial_servers or not (profile and profile.hccs_rings):
        raise ClusterSpecError(refusal)
    raise PartialServersRefusal(f"{refusal}; 910A clusters need 8 devices per server unless ")


def plain_copy(value: Any) -> Any:
    """A copy of ``value`` made of new plain ``dict`` and ``list`` containers (scalars are shared).

    Filters receive Ansible's lazy template containers; ``copy.deepcopy`` of those copies their
    templar and plugin loaders, which ansible-core 2.21 reports as deprecated (2.25: an error).
    Reading through the mapping/sequence protocols renders each value once and keeps none of that.
    """
    if isinstance(value, Mapping):
        return {key: plain_copy(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain_copy(item) for item in value]
    return value


def subset(candidate: Candidate, picked: list[int]) -> dict:
    """A copy of the candidate's server mapping holding only the ``picked`` devices."""
    entry = {key: plain_copy(value) for key, value in candidate.server.items() if key != "devices"}
    entry["devices"] = [plain_copy(candidate.by_id[i]) for i in picked]
    return entry
