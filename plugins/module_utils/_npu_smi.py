# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Device discovery: ``npu-smi info -l`` / ``npu-smi info`` parsers and the ``/dev/davinciN`` fallback.

Parsers are pure functions raising :class:`NpuSmiParseError` with the raw text; :class:`NpuSmi`
runs the binary through ``_command.run`` (argument lists only, with a timeout).

Runs on target hosts: Python 3.8+, stdlib only.
"""

from __future__ import annotations

import os
import re

from ansible_collections.ascend.cluster.plugins.module_utils import _chip, _command

# Where the driver installs npu-smi besides PATH.
INSTALL_DIRS = ("/usr/local/sbin", "/usr/local/bin", "/usr/local/Ascend/driver/tools")
# Seconds one npu-smi call may take.
DEFAULT_TIMEOUT = _command.DEFAULT_TIMEOUT
HEALTH_VALUES = ("OK", "Warning", "Alarm", "Critical", "UNKNOWN")

_TOTAL = re.compile(r"^\s*Total\s+Count\s*:\s*(\d+)\s*$", re.IGNORECASE | re.MULTILINE)
_NPU_ID = re.compile(r"^\s*NPU\s+ID\s*:\s*(\d+)\s*$", re.IGNORECASE)
_CHIP_COUNT = re.compile(r"^\s*Chip\s+Count\s*:\s*(\d+)\s*$", re.IGNORECASE)
_BUS_ID = re.compile(r"^[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f]$")
_DAVINCI = re.compile(r"^davinci(\d+)$")


class NpuSmiParseError(ValueError):
    """npu-smi printed something we do not understand; ``raw`` holds it."""

    def __init__(self, what: str, raw: str) -> None:
        self.what = what
        self.raw = raw
        super().__init__("cannot parse %s from npu-smi output %r" % (what, raw))


def parse_info_list(raw: str) -> list:
    """Parse ``npu-smi info -l`` -> ``[{"npu_id": int, "chip_count": int}, ...]`` in printed order."""
    total = _TOTAL.search(raw)
    npus: list = []
    for line in raw.splitlines():
        match = _NPU_ID.match(line)
        if match:
            npus.append({"npu_id": int(match.group(1)), "chip_count": 1})
            continue
        match = _CHIP_COUNT.match(line)
        if match and npus:
            npus[-1]["chip_count"] = int(match.group(1))
    if total is None and not npus:
        raise NpuSmiParseError("NPU list (Total Count / NPU ID)", raw)
    if total is not None and int(total.group(1)) != len(npus):
        raise NpuSmiParseError("NPU list (Total Count %s but %d NPU IDs)" % (total.group(1), len(npus)), raw)
    return npus


def _cells(line: str) -> list:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def parse_info_table(raw: str) -> list:
    """Parse the ``npu-smi info`` box table -> one dict per NPU.

    ``{"npu_id", "name", "health", "chips": [{"chip_id", "phy_id", "bus_id", "health"}]}``; ``phy_id``
    is None unless the table has a ``Chip  Phy-ID`` column (A3 boards). A chip's health is the NPU
    row printed above it (A3 boards print one per chip); the NPU's is its worst chip's. The process
    section is skipped.
    """
    npus: list = []
    current: dict | None = None
    row_health = None
    for line in raw.splitlines():
        if not line.lstrip().startswith("|"):
            continue
        cells = _cells(line)
        if len(cells) < 2:
            continue
        first = cells[0].split()
        if not first or not first[0].isdigit():
            continue
        if cells[1] in HEALTH_VALUES and len(first) >= 2:
            npu_id = int(first[0])
            row_health = cells[1]
            # A3 boards repeat the NPU row above each of its chips: one entry per NPU id.
            current = next((npu for npu in npus if npu["npu_id"] == npu_id), None)
            if current is None:
                current = {"npu_id": npu_id, "name": " ".join(first[1:]), "health": cells[1], "chips": []}
                npus.append(current)
            elif cells[1] != "OK":
                current["health"] = cells[1]  # the NPU is as healthy as its worst chip
        elif _BUS_ID.match(cells[1]) and current is not None:
            phy_id = int(first[1]) if len(first) >= 2 and first[1].isdigit() else None
            current["chips"].append({"chip_id": int(first[0]), "phy_id": phy_id, "bus_id": cells[1], "health": row_health})
    if not npus:
        raise NpuSmiParseError("NPU table (rows '| <id> <name> | <health> |')", raw)
    return npus


_VERSION = re.compile(r"^\|?\s*npu-smi\s+\S+\s+Version:\s*(\S+)", re.IGNORECASE | re.MULTILINE)
# Health values that refuse a launch on the chip (an Alarm or Critical chip fails training or the node).
FAILING_HEALTH = ("Alarm", "Critical")


def parse_version(raw: str) -> str | None:
    """The ``Version:`` of ``npu-smi info``'s header line (``| npu-smi 24.1.0   Version: 24.1.0 |``), or None."""
    match = _VERSION.search(raw)
    return match.group(1) if match else None


def chip_devices(table: list) -> dict:
    """``{(npu_id, chip_id): device_id}`` from the parsed ``npu-smi info`` table: the one device numbering.

    A chip's device is its ``Phy-ID`` where the table prints one (A3 boards: the id ``hccn_tool -i``, the rank
    table's ``device_id``, ``DEVICE_ID`` and ``ASCEND_RT_VISIBLE_DEVICES`` use; NPU 4 chip 1 is device 9), the NPU
    id on boards with one chip per NPU, else ``npu_id * chips + chip``. Health (:func:`device_health`), the process
    section (:func:`parse_npu_processes`) and the devices (:func:`device_ids`) all count devices this way. An NPU
    row without a chip row stands for chip 0.
    """
    devices: dict = {}
    for npu in table:
        chips = npu["chips"] or [{"chip_id": 0, "phy_id": None}]
        for chip in chips:
            if chip["phy_id"] is not None:
                device = chip["phy_id"]
            elif len(chips) > 1:
                device = npu["npu_id"] * len(chips) + chip["chip_id"]
            else:
                device = npu["npu_id"]
            devices[(npu["npu_id"], chip["chip_id"])] = device
    return devices


def device_health(table: list) -> dict:
    """``{device_id: health}`` from the parsed ``npu-smi info`` table, devices numbered as :func:`chip_devices` does.

    On boards with several chips per NPU each chip is a device with its own row's health; otherwise the NPU id is
    the device, with the NPU's health.
    """
    health: dict = {}
    by_npu = dict((npu["npu_id"], npu) for npu in table)
    for (npu_id, chip_id), device in chip_devices(table).items():
        npu = by_npu[npu_id]
        chip: dict = next((c for c in npu["chips"] if c["chip_id"] == chip_id), {})
        health[device] = chip.get("health") or npu["health"]
    return health


def device_ids(npu_list: list, table: list | None = None) -> list:
    """Physical device ids (the ``hccn_tool -i`` numbers), sorted.

    The table's ``Phy-ID`` column wins when present. Otherwise one device per NPU id, or, when an
    NPU has several chips (A3 "Chip Count" 2), ``npu_id * chip_count + chip`` for each chip.
    """
    if table:
        phy = [chip["phy_id"] for npu in table for chip in npu["chips"] if chip["phy_id"] is not None]
        if phy:
            return sorted(set(phy))
    ids = set()
    for npu in npu_list:
        count = max(1, npu["chip_count"])
        if count == 1:
            ids.add(npu["npu_id"])
        else:
            ids.update(npu["npu_id"] * count + chip for chip in range(count))
    return sorted(ids)


def chip_name(table: list) -> str | None:
    """The ``Name`` column of the first NPU (all NPUs of a server are the same model)."""
    for npu in table:
        if npu.get("name"):
            return npu["name"]
    return None


def chip_model(table: list) -> str | None:
    """Canonical chip (``_chip`` names) from the table, or None when the name is unknown.

    A3 boards print the generic name ``Ascend910`` (which alone reads as 910A), but they are the
    only ones with two chips per NPU and a ``Phy-ID`` column.
    """
    name = chip_name(table)
    if not name:
        return None
    try:
        model = _chip.normalize_chip(name)
    except ValueError:
        return None
    multi_chip = any(len(npu["chips"]) > 1 or any(c["phy_id"] is not None for c in npu["chips"]) for npu in table)
    if model == "910A" and multi_chip:
        return "A3"
    return model


_PROC_HEADER = re.compile(r"process\s+id", re.IGNORECASE)
_PROC_ROW = re.compile(r"^\|\s*(\d+)(?:\s+(\d+))?\s*\|\s*(\d+)\s*\|\s*([^|]*?)\s*\|")


def parse_npu_processes(raw: str, table: list) -> list:
    """Rows of ``npu-smi info``'s process section -> ``[{"device_id", "npu_id", "chip_id", "where", "pid", "name"}]``.

    The section starts at the header row naming ``Process id`` (``| NPU  Chip | Process id | Process name |
    ...``, newer npu-smi adds ``Process id in container``); ``No running processes found in NPU N`` rows hold
    nothing. A row names the NPU and its chip as the NPU table above does; ``device_id`` is that chip's device in
    ``table`` (the parsed table of the same output, :func:`chip_devices`) - on A3 the row ``4  1`` is device 9, not 4;
    ``where`` says it as npu-smi does, ``NPU 3``, or ``NPU 4 chip 1 (device 9)`` where an NPU has several chips.
    Raises :class:`NpuSmiParseError` when there is no process section (the output is cut short, so leftover
    processes cannot be seen) or a row names a chip the table does not list.
    """
    devices = chip_devices(table)
    chips = dict((npu["npu_id"], len(npu["chips"])) for npu in table)
    rows = []
    in_section = False
    for line in raw.splitlines():
        if _PROC_HEADER.search(line):
            in_section = True
            continue
        if not in_section:
            continue
        match = _PROC_ROW.match(line.strip())
        if match:
            npu_id, chip_id = int(match.group(1)), int(match.group(2) or 0)
            if (npu_id, chip_id) not in devices:
                raise NpuSmiParseError("process row of NPU %d chip %d, which the NPU table does not list" % (npu_id, chip_id), raw)
            device = devices[(npu_id, chip_id)]
            where = "NPU %d chip %d (device %d)" % (npu_id, chip_id, device) if chips[npu_id] > 1 else "NPU %d" % npu_id
            rows.append(
                {
                    "device_id": device,
                    "npu_id": npu_id,
                    "chip_id": chip_id,
                    "where": where,
                    "pid": int(match.group(3)),
                    "name": match.group(4),
                }
            )
    if not in_section:
        raise NpuSmiParseError("process section (header '| NPU  Chip | Process id | ...')", raw)
    return rows


def read_info(raw: str) -> dict:
    """Everything the pre-flight and diagnose read from one ``npu-smi info``, devices numbered one way (:func:`chip_devices`).

    ``{"health": {device: health}, "processes": parse_npu_processes(...), "version": str | None, "name": str | None,
    "npu_of": {device: npu_id}}`` (``npu_of``: the NPU id a device's board queries take, ``npu-smi info -t board -i``);
    :class:`NpuSmiParseError` when the NPU table or the process section cannot be read.
    """
    table = parse_info_table(raw)
    return {
        "health": device_health(table),
        "processes": parse_npu_processes(raw, table),
        "version": parse_version(raw),
        "name": chip_name(table),
        "npu_of": dict((device, npu_id) for (npu_id, _chip_id), device in chip_devices(table).items()),
    }


def davinci_devices(dev_dir: str = "/dev") -> list:
    """Device ids from ``/dev/davinciN`` nodes (not ``davinci_manager``), sorted; [] if none."""
    try:
        names = os.listdir(dev_dir)
    except OSError:
        return []
    return sorted(int(m.group(1)) for m in (_DAVINCI.match(n) for n in names) if m)


def find_binary(module: _command.BinFinder, explicit: str | None = None) -> str | None:
    """Path of npu-smi: ``explicit`` if given (None if not executable), else PATH and INSTALL_DIRS."""
    if explicit:
        if os.sep not in explicit:
            return module.get_bin_path(explicit) or None
        return explicit if os.path.isfile(explicit) and os.access(explicit, os.X_OK) else None
    return module.get_bin_path("npu-smi", opt_dirs=list(INSTALL_DIRS)) or None


class NpuSmiError(Exception):
    """npu-smi failed; carries the command and its raw output."""

    def __init__(self, cmd: list, rc: int, stdout: str, stderr: str) -> None:
        self.cmd = cmd
        self.rc = rc
        self.stdout = stdout
        self.stderr = stderr
        super().__init__("%s failed (rc=%d): %s" % (" ".join(cmd), rc, stderr.strip() or stdout.strip()))


class NpuSmi(_command.ToolClient):
    """Client for one npu-smi binary."""

    def run(self, args: list) -> str:
        cmd = [self.binary] + list(args)
        # `info` always prints something: rc 0 with no output at all is not an answer (seen under
        # load with run_command, ansible/ansible#51393), so ask once more before believing it.
        for dummy in range(2):
            try:
                rc, out, err = self.runner(cmd, timeout=self.timeout)
            except OSError as exc:
                raise NpuSmiError(cmd, 127, "", str(exc)) from exc
            if rc != 0 or (out or "").strip() or (err or "").strip():
                break
        if rc != 0:
            raise NpuSmiError(cmd, rc, out or "", err or "")
        return out or ""

    def info_list(self) -> list:
        return parse_info_list(self.run(["info", "-l"]))

    def info_table(self) -> list:
        return parse_info_table(self.run(["info"]))
