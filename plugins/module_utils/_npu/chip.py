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


# What npu-smi prints (its ``Name`` column, the ``Chip Name`` of ``npu-smi info -m`` / ``-t board -c``) is another
# vocabulary than what a user types (``chip: 910B`` means Atlas A2): a bare ``910B`` from npu-smi is a first-generation
# Ascend 910. The rule is MindCluster's (ascend-common ``api/default_name.go``: ``Ascend910BPattern`` ``^(910B\d{1}|A2G\d{1})``
# is Atlas A2, else ``Ascend910APattern`` ``^910`` the first-generation 910; ``devmanager/common/utils.go``
# ``GetDeviceTypeByChipName``), so 910B1..910B4, 910B2C and 910B4-1 are A2 and 910A, 910B, 910ProA, 910ProB are 910A.
# A3 boards print the generic ``Ascend910``: MindCluster tells them by board id; npu-smi's table tells them by its
# ``Chip  Phy-ID`` column (two dies per NPU). docs/real-outputs.md lists the samples.
_NPU_SMI_A2 = re.compile(r"^(910B\d|A2G\d)")
_NPU_SMI_A3 = re.compile(r"^910_93")
_NPU_SMI_GEN1 = re.compile(r"^910")
A3_GENERIC_NAME = "Ascend910"


def npu_smi_chip(name: str, phy_ids: bool = False) -> str | None:
    """The chip (:data:`CHIPS` name) that npu-smi's chip name ``name`` stands for, or None when it names none for sure.

    ``phy_ids``: the table the name comes from has a ``Chip  Phy-ID`` column (or two chips per NPU) - what makes the
    generic ``Ascend910`` an A3 board; without it that name is ambiguous (None). ``-m``'s ``Ascend 910A`` (a space after
    ``Ascend``) reads as ``910A``. Not for what a user types: :func:`normalize_chip` reads that.
    """
    text = str(name or "").strip()
    if text == A3_GENERIC_NAME:
        return "A3" if phy_ids else None
    rest = re.sub(r"^Ascend[ _]?", "", text) if text.startswith("Ascend") else text
    if _NPU_SMI_A3.match(rest):
        return "A3"
    if _NPU_SMI_A2.match(rest):
        return "910B"
    if _NPU_SMI_GEN1.match(rest):
        return "910A"
    return None


def get_chip(name: str) -> ChipProfile:
    """Return the ChipProfile for ``name`` (any alias); ValueError when unknown."""
    return CHIPS[normalize_chip(name)]
