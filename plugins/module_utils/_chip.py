# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Chip profiles: what each Ascend generation allows (device ids, rank-table version, rings).

Shared by modules (on the target, Python 3.8+) and filters (on the controller); stdlib only.
"""

from __future__ import annotations

import re


class ChipProfile:
    """Facts about one chip generation, taken from the reference (section 1 and 3)."""

    def __init__(self, name: str, max_device_id: int, rank_table_version: str, hccs_rings: tuple | None, soc_name: str) -> None:
        self.name = name
        self.max_device_id = max_device_id
        self.rank_table_version = rank_table_version
        # 910A: devices 0-3 and 4-7 are separate HCCS rings; None where any set is allowed.
        self.hccs_rings = hccs_rings
        self.soc_name = soc_name

    def __repr__(self):
        return "ChipProfile(%r)" % self.name


CHIPS = {
    "910A": ChipProfile("910A", 7, "1.0", (frozenset(range(4)), frozenset(range(4, 8))), "Ascend910A"),
    "910B": ChipProfile("910B", 15, "1.0", None, "Ascend910B"),
    "A3": ChipProfile("A3", 15, "1.2", None, "Ascend910_93"),
}

# The highest device id any known chip has: what a check accepts when it does not know the chip
# (hccn_config, hccn_facts, a rank table built without a chip). The one place that says it.
ANY_CHIP_MAX_DEVICE_ID = max(profile.max_device_id for profile in CHIPS.values())

# Names seen in the wild (npu-smi "Name" column, marketing names, CANN soc versions).
_ALIASES = {
    "910": "910A",
    "910a": "910A",
    "ascend910": "910A",
    "ascend910a": "910A",
    "ascend910pro": "910A",
    "ascend910proa": "910A",
    "910b": "910B",
    "a2": "910B",
    "910b1": "910B",
    "910b2": "910B",
    "910b3": "910B",
    "910b4": "910B",
    "ascend910b": "910B",
    "a3": "A3",
    "910_93": "A3",
    "910c": "A3",
    "ascend910_93": "A3",
    "ascend910c": "A3",
}


def chip_names() -> list:
    """Canonical chip names, for documentation and error messages."""
    return sorted(CHIPS)


def normalize_chip(name: str) -> str:
    """Return the canonical chip name for ``name`` or raise ValueError saying which are known."""
    key = re.sub(r"[\s-]", "", str(name)).lower()
    if key.upper() in CHIPS:
        return key.upper()
    if key in _ALIASES:
        return _ALIASES[key]
    # npu-smi prints e.g. "910B3" or "Ascend910B4"; A3 boards print "910_9391" style names.
    if re.match(r"^(ascend)?910b\d*$", key):
        return "910B"
    if re.match(r"^(ascend)?910_93\w*$", key):
        return "A3"
    if re.match(r"^(ascend)?910(pro)?[a-z]?$", key):
        return "910A"
    raise ValueError("unknown chip %r: use one of %s (aliases: A2 for 910B, 910 for 910A)" % (name, ", ".join(chip_names())))


def get_chip(name: str) -> ChipProfile:
    """Return the ChipProfile for ``name`` (any alias); ValueError when unknown."""
    return CHIPS[normalize_chip(name)]
