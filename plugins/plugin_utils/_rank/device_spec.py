# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The device list syntaxes users already type, read strictly.

- ``parse_device_range``: ``hccl_tools.py --device_num "[0,8)"`` (half-open). Unlike that tool
  it reads two-digit ids (``"[0,16)"`` is 16 devices, not one), tolerates spaces and rejects
  empty or out-of-range ranges with a message; ``"[0,7]"`` (closed) is accepted too.
- ``parse_npu_env``: the ``--env`` of the seed launcher ``distribute_npu.py``:
  ``"10.0.0.1:8,10.0.0.2:4:0123"`` = server:device count[:device ids], one digit per device id;
  ``8-15`` or ``0/1/10/11`` spell ids above 9 (16-device servers).
"""

from __future__ import annotations

import re
from typing import Any

from ansible_collections.ascend.cluster.plugins.plugin_utils._errors import ClusterSpecError
from ansible_collections.ascend.cluster.plugins.plugin_utils._rank.chip_rules import (
    chip_label,
    device_id_of,
    is_decimal,
    max_device_id,
    resolve_chip,
)
from ansible_collections.ascend.cluster.plugins.plugin_utils._rank.select import Candidate, read_available, subset

_RANGE = re.compile(r"^\s*\[\s*(\d+)\s*,\s*(\d+)\s*([)\]])\s*$", re.ASCII)


def parse_device_range(spec: Any, chip: str | None = None) -> list[int]:
    """``"[0,8)"`` -> ``[0, 1, ..., 7]``; ``"[4,8)"`` -> ``[4, 5, 6, 7]``; ``"[0,7]"`` -> 0..7."""
    profile = resolve_chip(chip)
    match = _RANGE.match(spec) if isinstance(spec, str) else None
    if not match:
        raise ClusterSpecError(f"{spec!r} is not a device range: write '[first,end)' with end one past the last device, e.g. '[0,8)'")
    first, end = int(match.group(1)), int(match.group(2))
    last = end if match.group(3) == "]" else end - 1
    if last < first:
        raise ClusterSpecError(f"{spec!r} holds no device: the end must be greater than the start, e.g. '[0,8)'")
    highest = max_device_id(profile)
    if last > highest:
        raise ClusterSpecError(
            f"{spec!r} reaches device {last}, but {chip_label(profile)} has devices 0-{highest}; use e.g. '[0,{highest + 1})'"
        )
    return list(range(first, last + 1))


def _parse_ids(text: str, where: str, profile: Any) -> list[int]:
    """``0123`` (one digit per device, the seed syntax) or ``8-15`` / ``0/1/10/11``."""
    if is_decimal(text):
        tokens = list(text)
    else:
        tokens = []
        for part in text.split("/"):
            bounds = part.split("-")
            if len(bounds) == 2 and all(is_decimal(b.strip()) for b in bounds):
                low, high = int(bounds[0]), int(bounds[1])
                if high < low:
                    raise ClusterSpecError(f"{where}: device range {part!r} runs backwards")
                tokens.extend(str(i) for i in range(low, high + 1))
            elif is_decimal(part.strip()):
                tokens.append(part.strip())
            else:
                raise ClusterSpecError(
                    f"{where}: device ids {text!r} are not readable: write one digit per device ('0123'), "
                    f"a range ('8-15') or ids joined by '/' ('0/1/10/11')"
                )
    ids = [device_id_of(token, where, profile) for token in tokens]
    repeated = sorted({i for i in ids if ids.count(i) > 1})
    if repeated:
        raise ClusterSpecError(f"{where}: device {repeated[0]} is listed more than once")
    return sorted(ids)


def _available_index(available: Any, profile: Any) -> dict[str, Candidate]:
    try:
        candidates = read_available(available, profile)
    except ClusterSpecError as exc:
        raise ClusterSpecError(f"available: {exc}") from None
    return {str(candidate.server["server_id"]): candidate for candidate in candidates}


def parse_npu_env(spec: Any, chip: str | None = None, np: Any = None, available: Any = None) -> list[dict]:
    """``"10.0.0.1:8,10.0.0.2:4:0123"`` -> ``[{server_id, devices: [{device_id}, ...]}, ...]``.

    A count without ids means devices 0..count-1. With ``available`` (servers as gathered by
    hccn_facts), the devices are taken from there, device_ip included, and must exist.
    With ``np``, the device counts must add up to it (the launcher's ``--np``).
    """
    profile = resolve_chip(chip)
    if not isinstance(spec, str) or not spec.strip():
        raise ClusterSpecError(f"{spec!r} is not an --env string: write 'server:count[:ids],...', e.g. '10.0.0.1:8'")
    index = _available_index(available, profile) if available is not None else None
    result: list[dict] = []
    seen: set[str] = set()
    for item in spec.split(","):
        fields = [field.strip() for field in item.strip().split(":")]
        where = f"--env entry {item.strip()!r}"
        if len(fields) not in (2, 3) or not fields[0] or not is_decimal(fields[1]):
            raise ClusterSpecError(f"{where} is not 'server:count' or 'server:count:ids' (e.g. '10.0.0.2:4:0123')")
        server_id, count = fields[0], int(fields[1])
        if server_id in seen:
            raise ClusterSpecError(f"{where}: server {server_id} appears more than once")
        seen.add(server_id)
        if len(fields) == 3 and fields[2]:
            ids = _parse_ids(fields[2], where, profile)
        else:
            ids = list(range(count))
            if count - 1 > max_device_id(profile):
                raise ClusterSpecError(f"{where}: {chip_label(profile)} has at most {max_device_id(profile) + 1} devices per server")
        if count != len(ids) or count == 0:
            raise ClusterSpecError(f"{where}: says {count} devices but lists {len(ids)}: the count must match the ids")
        result.append(_server_entry(server_id, ids, index, where))
    total = sum(len(server["devices"]) for server in result)
    if np is not None and str(np).strip() != str(total):
        raise ClusterSpecError(f"np is {np} but {spec!r} lists {total} devices")
    return result


def _server_entry(server_id: str, ids: list[int], index: Any, where: str) -> dict:
    if index is None:
        return {"server_id": server_id, "devices": [{"device_id": i} for i in ids]}
    if server_id not in index:
        raise ClusterSpecError(f"{where}: server {server_id} is not among the available servers ({', '.join(index)})")
    candidate = index[server_id]
    missing = [i for i in ids if i not in candidate.by_id]
    if missing:
        raise ClusterSpecError(f"{where}: server {server_id} has no device {missing[0]} available (it has {candidate.ids})")
    return subset(candidate, ids)
