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

from ansible_collections.ascend.cluster.plugins.module_utils import _command
from ansible_collections.ascend.cluster.plugins.module_utils._npu import chip as _chip

# Where the driver installs npu-smi besides PATH.
INSTALL_DIRS = ("/usr/local/sbin", "/usr/local/bin", "/usr/local/Ascend/driver/tools")
# Seconds one npu-smi call may take.
DEFAULT_TIMEOUT = _command.DEFAULT_TIMEOUT
# npu-smi's health values, from the best to the worst (UNKNOWN: the device does not exist or did not start).
HEALTH_VALUES = ("OK", "Warning", "Alarm", "Critical", "UNKNOWN")

_TOTAL = re.compile(r"^\s*Total\s+Count\s*:\s*(\d+)\s*$", re.IGNORECASE | re.MULTILINE)
_NPU_ID = re.compile(r"^\s*NPU\s+ID\s*:\s*(\d+)\s*$", re.IGNORECASE)
_CHIP_COUNT = re.compile(r"^\s*Chip\s+Count\s*:\s*(\d+)\s*$", re.IGNORECASE)
_BUS_ID = re.compile(r"^[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f]$")
_DAVINCI = re.compile(r"^davinci(\d+)$")
_USAGE = re.compile(r"(\d+)\s*/\s*(\d+)")


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


def _usage_pairs(cell: str) -> list:
    """``[(used, total), ...]`` of a chip row's third cell: Memory-Usage (the board's DDR) then HBM-Usage
    (``0    / 0          3412 / 65536``, ``56152/ 65536``)."""
    return [(int(used), int(total)) for used, total in _USAGE.findall(cell)]


def parse_info_table(raw: str) -> list:
    """Parse the ``npu-smi info`` box table -> one dict per NPU.

    ``{"npu_id", "name", "health", "line", "chips": [{"chip_id", "phy_id", "bus_id", "health", "memory", "hbm"}]}``;
    ``line`` is the NPU's first row as printed (what a message quotes); ``phy_id`` is None unless the table has a
    ``Chip  Phy-ID`` column (A3 boards); ``memory`` / ``hbm`` are ``(used, total)`` MB of the chip row's
    Memory-Usage (the board's DDR: in use on first-generation 910 boards, ``0 / 0`` on A2 and A3) and HBM-Usage, None
    where the row prints none. A chip's health is the NPU row printed above it (A3 boards print one per chip); the
    NPU's is its worst chip's. The layouts of npu-smi 1.9 / 21.0 (a narrower first column, no hugepages), 23.x-25.x and
    26.x (wider) read alike; a chip row whose Bus-Id is not one (``0000:xx:00.0`` as a report redacted it) is left
    out, its NPU standing for chip 0. The process section is skipped.
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
                current = {"npu_id": npu_id, "name": " ".join(first[1:]), "health": cells[1], "line": line.strip(), "chips": []}
                npus.append(current)
            elif HEALTH_VALUES.index(cells[1]) > HEALTH_VALUES.index(current["health"]):
                current["health"] = cells[1]  # the NPU is as healthy as its worst chip
        elif _BUS_ID.match(cells[1]) and current is not None:
            phy_id = int(first[1]) if len(first) >= 2 and first[1].isdigit() else None
            pairs = _usage_pairs(cells[2]) if len(cells) > 2 else []
            current["chips"].append(
                {
                    "chip_id": int(first[0]),
                    "phy_id": phy_id,
                    "bus_id": cells[1],
                    "health": row_health,
                    "memory": pairs[0] if pairs else None,
                    "hbm": pairs[1] if len(pairs) > 1 else None,
                }
            )
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


def version_problem(raw: str) -> str | None:
    """Why :func:`parse_version` gave no driver version although npu-smi printed its table: the header line it read (the
    first line naming ``npu-smi``, else the first with words in it), for the facts' warning; None when it gave one."""
    if parse_version(raw) is not None:
        return None
    lines = [line.strip() for line in raw.splitlines() if any(c.isalnum() for c in line)]
    header = next((line for line in lines if "npu-smi" in line.lower()), lines[0] if lines else "")
    return "npu-smi info's header gave no driver version (no 'Version:' in %r): driver version unknown" % header[:120]


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


def _phy_ids(table: list) -> bool:
    """Whether the table names each chip's Phy-ID or shows several chips per NPU (A3 boards)."""
    return any(len(npu["chips"]) > 1 or any(c["phy_id"] is not None for c in npu["chips"]) for npu in table)


def _ddr_totals(table: list) -> set:
    """The Memory-Usage totals (MB) the chip rows print: the board's DDR, 0 on A2 / A3, in use on first-generation 910."""
    return set(chip["memory"][1] for npu in table for chip in npu["chips"] if chip.get("memory"))


def read_chip(table: list) -> tuple:
    """``(chip, problem)``: the chip (``_npu.chip.CHIPS`` name) npu-smi's table shows, or None and, when the table shows a
    name that does not say which chip for sure, what is unclear, naming the field and the line.

    The name decides (``_npu.chip.npu_smi_chip``); a bare ``910B`` - the first-generation variant - must also show what the
    first-generation boards print: their DDR in use in the Memory-Usage column (every public 910A / 910B table does,
    every A2 / A3 one prints ``0 / 0``). Where that does not hold, or the NPUs print different names, the chip is
    unknown: the gate that needs it (the rank table's chip rules, the net_health layout) refuses, naming the line.
    """
    names = []
    for npu in table:
        if npu.get("name") and npu["name"] not in names:
            names.append(npu["name"])
    if not names:
        return None, None
    first = next(npu for npu in table if npu.get("name"))
    where = "npu-smi info's Name column %r (line %r)" % (first["name"], first.get("line") or "")
    if len(names) > 1:
        return None, "npu-smi info names different chips on one server (%s; line %r)" % (", ".join(names), first.get("line") or "")
    chip = _chip.npu_smi_chip(names[0], _phy_ids(table))
    if chip is None:
        if names[0] == _chip.A3_GENERIC_NAME:
            return None, "%s is the generic name A3 boards print, but the table has no Chip Phy-ID column: A3 or not is unclear" % where
        return None, "%s names no chip this collection knows (910A, 910B, 910ProB; 910B1-910B4, 910B2C; Ascend910 with Chip Phy-ID)" % where
    if names[0] == "910B":
        ddr = _ddr_totals(table)
        if not ddr or 0 in ddr:
            return None, (
                "%s is the first-generation Ascend 910B, but its Memory-Usage column shows no DDR in use (%s), as "
                "only A2 boards print: which chip it is is unclear" % (where, "none printed" if not ddr else "0 MB")
            )
    return chip, None


def chip_facts(table: list | None) -> dict:
    """``hccn_facts``' chip facts from the table: ``{"chip", "chip_name", "chip_problem"}`` (:func:`read_chip`; all None
    without a table: npu-smi not read)."""
    if not table:
        return {"chip": None, "chip_name": None, "chip_problem": None}
    chip, problem = read_chip(table)
    return {"chip": chip, "chip_name": chip_name(table), "chip_problem": problem}


def chip_model(table: list) -> str | None:
    """The chip (``_npu.chip`` names) of :func:`read_chip`, None when unclear."""
    return read_chip(table)[0]


_PROC_HEADER = re.compile(r"process\s+id", re.IGNORECASE)
_PROC_CONTAINER = re.compile(r"process\s+id\s+in\s+container", re.IGNORECASE)
_NPU_CHIP = re.compile(r"^(\d+)(?:\s+(\d+))?$")


def parse_npu_processes(raw: str, table: list) -> list:
    """Rows of ``npu-smi info``'s process section -> ``[{"device_id", "npu_id", "chip_id", "where", "pid", "name",
    "container_pid"}]``.

    The section starts at the header row naming ``Process id`` (``| NPU  Chip | Process id | Process name | ...``);
    ``No running processes found in NPU N`` rows hold nothing. npu-smi 26.x adds a last column, ``Process id in
    container``: ``NA`` for a process of the host, else its PID in its container (``Process id`` is then the host's);
    ``container_pid`` is that number, None otherwise. A row names the NPU and its chip as the NPU table above does;
    ``device_id`` is that chip's device in ``table`` (the parsed table of the same output, :func:`chip_devices`) - on A3
    the row ``4  1`` is device 9, not 4; ``where`` says it as npu-smi does, ``NPU 3``, or ``NPU 4 chip 1 (device 9)``
    where an NPU has several chips. A process name may be empty (npu-smi prints none for some processes). Raises
    :class:`NpuSmiParseError` when there is no process section (the output is cut short, so leftover processes cannot
    be seen) or a row names a chip the table does not list.
    """
    devices = chip_devices(table)
    chips = dict((npu["npu_id"], len(npu["chips"])) for npu in table)
    rows = []
    in_section = False
    container_column = False
    for line in raw.splitlines():
        if _PROC_HEADER.search(line):
            in_section = True
            container_column = bool(_PROC_CONTAINER.search(line))
            continue
        if not in_section or not line.lstrip().startswith("|"):
            continue
        cells = _cells(line)
        where_cell = _NPU_CHIP.match(cells[0]) if cells else None
        if where_cell is None or len(cells) < 3 or not (cells[1].isascii() and cells[1].isdigit()):
            continue
        npu_id, chip_id = int(where_cell.group(1)), int(where_cell.group(2) or 0)
        if (npu_id, chip_id) not in devices:
            raise NpuSmiParseError("process row of NPU %d chip %d, which the NPU table does not list" % (npu_id, chip_id), raw)
        device = devices[(npu_id, chip_id)]
        where = "NPU %d chip %d (device %d)" % (npu_id, chip_id, device) if chips[npu_id] > 1 else "NPU %d" % npu_id
        in_container = cells[4] if container_column and len(cells) > 4 else ""
        rows.append(
            {
                "device_id": device,
                "npu_id": npu_id,
                "chip_id": chip_id,
                "where": where,
                "pid": int(cells[1]),
                "name": cells[2],
                "container_pid": int(in_container) if in_container.isascii() and in_container.isdigit() else None,
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
        "chip_of": dict((device, chip_id) for (_npu_id, chip_id), device in chip_devices(table).items()),
    }


_FIELD = re.compile(r"^\s*([^:]*?)\s*:[ \t]*(.*?)\s*$")


def parse_fields(raw: str) -> list:
    """npu-smi's ``Name : value`` lines (``-t board``, ``-t health``, ``-l``, ...) -> ``[(name, value, line)]`` in printed
    order, indented by spaces or a tab alike. A line with an empty name (`` : node type=...``, how ``-t health``
    continues its Error Information) continues the field above: its value is appended, after a ``; ``. Lines without a
    colon (a blank line, ``Invalid card id.``) are skipped."""
    fields: list = []
    for line in raw.splitlines():
        found = _FIELD.match(line)
        if not found:
            continue
        name, value = found.group(1), found.group(2)
        if not name:
            if fields and value:
                last = fields[-1]
                fields[-1] = (last[0], (last[1] + "; " + value) if last[1] else value, last[2])
            continue
        fields.append((name, value, line.strip()))
    return fields


def _field(fields: list, name: str) -> tuple:
    """``(value, line)`` of the first field called ``name`` (any case), ``(None, None)`` when there is none."""
    for key, value, line in fields:
        if key.lower() == name.lower():
            return value, line
    return None, None


def parse_health(raw: str) -> dict:
    """``npu-smi info -t health -i <NPU> -c <chip>`` -> ``{"health", "error_codes", "error_info", "line"}``.

    ``Health Status`` is one of :data:`HEALTH_VALUES`; ``Error Code`` is ``NA`` or one or more codes (``A4025021
    8C03A000 8C084E00``: ``error_codes`` lists them, ``[]`` for ``NA``); ``Error Information`` (``NA``: None) may go on
    over lines that start with a bare `` : `` - they are joined with ``; ``. The form without ``-c`` (one ``Health`` per
    chip, the MCU's last) gives the worst chip's health and no codes. ``health`` is None when no health value is
    printed or it is not one npu-smi documents: ``line`` then holds the line that was read (None when there was none),
    for the message that names it.
    """
    fields = parse_fields(raw)
    value, line = _field(fields, "Health Status")
    if value is None:
        states = [(v, ln) for k, v, ln in fields if k.lower() == "health"]
        known = [(v, ln) for v, ln in states if v in HEALTH_VALUES]
        value, line = max(known, key=lambda item: HEALTH_VALUES.index(item[0])) if known else (states[0] if states else (None, None))
    code, _code_line = _field(fields, "Error Code")
    info, _info_line = _field(fields, "Error Information")
    codes = [] if code in (None, "", "NA") else code.split()
    return {
        "health": value if value in HEALTH_VALUES else None,
        "error_codes": codes,
        "error_info": None if info in (None, "", "NA") else info,
        "line": line,
    }


def _map_number(values: dict, key: str) -> int | None:
    value = values.get(key)
    return int(value) if value is not None and re.match(r"^-?\d+$", value) else None


def parse_map(raw: str) -> list:
    """``npu-smi info -m`` -> ``[{"npu_id", "chip_id", "logic_id", "phy_id", "name", "line"}]`` for every chip row.

    The header names the columns (``NPU ID  Chip ID  Chip Logic ID  [Chip Phy-ID]  Chip Name``); a row's ids come
    first, its name (``Ascend 910A``, ``Mcu``) last. ``logic_id`` / ``phy_id`` are None where npu-smi prints ``-``
    (the MCU, which is no device); an ``NPU ID`` of ``-1`` marks an NPU that is not available (the npu-smi
    reference), its row kept with ``npu_id`` -1. Raises :class:`NpuSmiParseError` without the header.
    """
    columns = None
    rows = []
    for line in raw.splitlines():
        text = line.strip()
        if not text:
            continue
        if columns is None:
            if re.match(r"^NPU\s+ID\s+Chip\s+ID\s+Chip\s+Logic\s+ID", text, re.IGNORECASE):
                columns = [c.lower() for c in re.split(r"\s{2,}|\t", text)]
            continue
        ids = len(columns) - 1
        tokens = text.split()
        if len(tokens) <= ids or not re.match(r"^-?\d+$", tokens[0]):
            continue
        values = dict(zip(columns[:ids], tokens[:ids]))
        rows.append(
            {
                "npu_id": _map_number(values, "npu id"),
                "chip_id": _map_number(values, "chip id"),
                "logic_id": _map_number(values, "chip logic id"),
                "phy_id": _map_number(values, "chip phy-id"),
                "name": " ".join(tokens[ids:]),
                "line": text,
            }
        )
    if columns is None:
        raise NpuSmiParseError("chip map (header 'NPU ID  Chip ID  Chip Logic ID ...')", raw)
    return rows


def logic_ids(chip_map: list) -> dict:
    """``{(npu_id, chip_id): logic_id}`` of :func:`parse_map`'s rows that are devices (a logic id; an available NPU)."""
    return dict(
        ((row["npu_id"], row["chip_id"]), row["logic_id"])
        for row in chip_map
        if row["logic_id"] is not None and row["npu_id"] is not None and row["npu_id"] >= 0
    )


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
