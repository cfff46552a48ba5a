# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The device rules of each chip, as HCCL and the framework documents state them.

- device ids: 0-7 on 910A, 0-15 on A2 (910B) / A3;
- 910A HCCS rings: devices 0-3 and 4-7 are two rings; a single server runs 1, 2, 4 or 8
  devices, and a 2- or 4-device set must stay inside one ring; a cluster uses 8 x N devices
  (newer MindSpore docs also allow 1/2/4 x N, offered here behind ``allow_partial_servers``).

Shared by the rank table builder/validator and by device selection.
"""

from __future__ import annotations

from typing import Any, Iterable, Sequence

from ansible_collections.ascend.cluster.plugins.module_utils._npu.chip import ANY_CHIP_MAX_DEVICE_ID, ChipProfile, get_chip
from ansible_collections.ascend.cluster.plugins.plugin_utils._errors import ClusterSpecError

# How the 910A refusals name the switch that lifts them: the select_devices / rank_table filters' own option.
# A caller whose users set it under another name words the hint with PartialServersRefusal.naming.
PARTIAL_SERVERS = "allow_partial_servers=true"

SINGLE_SERVER_COUNTS_910A = (1, 2, 4, 8)


class PartialServersRefusal(ClusterSpecError):
    """A 910A refusal that ``allow_partial_servers`` would lift; its hint names the switch as the caller's users set it.

    The message is ``before + setting + after``; ``str()`` names the filters' option (:data:`PARTIAL_SERVERS`).
    """

    def __init__(self, before: str, after: str = "", setting: str = PARTIAL_SERVERS) -> None:
        self.before, self.after = before, after
        super().__init__(before + setting + after)

    def naming(self, setting: str) -> str:
        """The message with ``setting`` (``ascend_rank_table_allow_partial_910a=true``) in the hint."""
        return self.before + setting + self.after


def is_decimal(text: str) -> bool:
    """ASCII digits only: ``str.isdigit`` also accepts '²' and full-width digits."""
    return text.isascii() and text.isdigit()


def resolve_chip(chip: str | None) -> ChipProfile | None:
    """The profile for ``chip`` (any alias), ``None`` when not given; ClusterSpecError if unknown."""
    if chip is None or chip == "":
        return None
    try:
        return get_chip(chip)
    except ValueError as exc:
        raise ClusterSpecError(str(exc)) from None


def max_device_id(profile: ChipProfile | None) -> int:
    return ANY_CHIP_MAX_DEVICE_ID if profile is None else profile.max_device_id


def chip_label(profile: ChipProfile | None) -> str:
    return "any known chip" if profile is None else profile.name


def device_id_of(value: Any, where: str, profile: ChipProfile | None) -> int:
    """Coerce a device id given as int or decimal string and check it against the chip's range."""
    if isinstance(value, bool):
        number = None
    elif isinstance(value, int):
        number = value
    elif isinstance(value, str) and is_decimal(value.strip()):
        number = int(value.strip())
    else:
        number = None
    if number is None:
        raise ClusterSpecError(f"{where}: device_id {value!r} is not a whole number")
    highest = max_device_id(profile)
    if not 0 <= number <= highest:
        raise ClusterSpecError(f"{where}: device_id {number} is out of range for {chip_label(profile)} (0-{highest})")
    return number


def ring_index(profile: ChipProfile, device_ids: Iterable[int]) -> int | None:
    """Index of the HCCS ring holding all ``device_ids``, or None if they span rings."""
    ids = frozenset(device_ids)
    for index, ring in enumerate(profile.hccs_rings or ()):
        if ids <= ring:
            return index
    return None


def _format_ids(ids: Sequence[int]) -> str:
    return "{" + ", ".join(str(i) for i in ids) + "}"


def check_hccs_layout(
    profile: ChipProfile | None,
    servers: Sequence[tuple[str, Sequence[int]]],
    allow_partial_servers: bool = False,
) -> None:
    """Apply the 910A ring rules to ``[(server_id, sorted device ids), ...]``; no-op for other chips."""
    if profile is None or not profile.hccs_rings:
        return
    full = sum(len(ring) for ring in profile.hccs_rings)
    if len(servers) > 1 and not allow_partial_servers:
        for server_id, ids in servers:
            if len(ids) != full:
                raise PartialServersRefusal(
                    f"server {server_id}: {profile.name} clusters use all {full} devices of every server "
                    f"(8 x N), got {len(ids)} {_format_ids(ids)}; use whole servers, or set ",
                    " if your CANN allows 1/2/4 x N",
                )
        return
    counts = {len(ids) for _server_id, ids in servers}
    if len(counts) > 1:
        detail = ", ".join(f"{server_id}: {len(ids)}" for server_id, ids in servers)
        raise ClusterSpecError(f"{profile.name} needs the same number of devices on every server, got {detail}")
    for server_id, ids in servers:
        if len(ids) not in SINGLE_SERVER_COUNTS_910A:
            raise ClusterSpecError(
                f"server {server_id}: {profile.name} runs 1, 2, 4 or 8 devices per server, got {len(ids)} {_format_ids(ids)}"
            )
        if len(ids) in (2, 4) and ring_index(profile, ids) is None:
            rings = " or ".join(_format_ids(sorted(ring)) for ring in profile.hccs_rings)
            raise ClusterSpecError(
                f"server {server_id}: devices {_format_ids(ids)} span two HCCS rings; a {len(ids)}-device "
                f"set on {profile.name} must stay inside {rings}"
            )
