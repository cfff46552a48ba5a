"""The simulated ``npu-smi``: ``info -l``, the ``info`` box table, ``info -t board -i N`` and ``info -t health -i N -c C``.

Layouts of the box table, as the corpus' real outputs print them (tests/corpus/npu_smi, docs/real-outputs.md): 98 columns
(27 | 15 | 52) from npu-smi 23.0 to 25.x; 114 columns (27 | 15 | 70) from 26.x, whose process section adds ``Process id in
container``. A3 boards print two chips per NPU (``Chip  Phy-ID``) separated by a dashed line. The Name column is the
server's ``npu_name`` (``910B`` on a first-generation server, ``910B2C`` on an A2 one, ...; default the chip's); a
first-generation board shows its DDR in use in Memory-Usage, A2 / A3 ``0 / 0``.

Processes: a process "holds" device N when its environment has ``ASCEND_DEVICE_ID=N`` (or,
without it, ``DEVICE_ID=N``) and its command is not a shell. It belongs to this host when, in
bed mode, it shares the caller's network namespace, and in fabric mode its
``ASCEND_SIM_STATE`` (default /etc/ascend-sim) is the caller's state directory.
"""

from __future__ import annotations

import os
import sys

from . import versions
from ._rt import DEFAULT_STATE_DIR, SimError, load, state_dir

SHELLS = ("sh", "bash", "dash")

# chip -> (npu-smi name, chips per NPU, HBM MB); the driver a chip's server prints by default: versions.DEFAULT_DRIVER
CHIP_INFO = {
    "910A": ("910A", 1, 32768),
    "910B": ("910B3", 1, 65536),
    "A3": ("Ascend910", 2, 65536),
}
BUS_IDS = {
    "910A": ("C1", "81", "41", "01", "C2", "82", "42", "02"),
    "910B": ("C1", "C2", "81", "82", "01", "02", "41", "42", "C3", "C4", "83", "84", "03", "04", "43", "44"),
    "A3": ("9D", "9F", "99", "9B", "B9", "BB", "B5", "B7", "1D", "1F", "19", "1B", "39", "3B", "35", "37"),
}

# The npu-smi Names a chip's servers print (the corpus' samples): what ``--npu-name`` accepts for each chip.
NPU_NAMES = {
    "910A": ("910A", "910B", "910ProB"),
    "910B": ("910B1", "910B2", "910B3", "910B4", "910B2C", "910B4-1"),
    "A3": ("Ascend910",),
}
# the first npu-smi major version that prints the 114-column table (npu-smi 26.0.rc1 in the corpus)
WIDE_FROM = 26


class _Layout:
    """Column widths of one table layout: the third cell's width and its three sub-columns."""

    def __init__(self, third, sub):
        self.third = third
        self.sub = sub  # widths of Power / Temp / Hugepages (and AICore / Memory / HBM)
        self.width = 27 + 15 + third + 4
        self.top = "+" + "-" * (self.width - 2) + "+"
        self.cols = "+" + "-" * 27 + "+" + "-" * 15 + "+" + "-" * third + "+"
        self.double = "+" + "=" * 27 + "+" + "=" * 15 + "+" + "=" * third + "+"


STANDARD = _Layout(52, (12, 18, 21))
WIDE = _Layout(70, (21, 24, 24))
WIDTH = STANDARD.width
RULE_TOP = STANDARD.top
RULE_COLS = STANDARD.cols
RULE_DOUBLE = STANDARD.double


def npu_name(state: dict) -> str:
    """The Name npu-smi prints on this server: ``npu_name`` when set, else the chip's default."""
    return state.get("npu_name") or CHIP_INFO[state["chip"]][0]


driver_version = versions.driver_version


def layout(state: dict) -> _Layout:
    major = driver_version(state).split(".", 1)[0]
    return WIDE if major.isdigit() and int(major) >= WIDE_FROM else STANDARD


def _npus(state):
    """[(npu id, [(chip index, device id), ...])] in NPU order."""
    per_npu = CHIP_INFO[state["chip"]][1]
    npus: dict[int, list[tuple[int, int]]] = {}
    for dev in sorted(int(i) for i in state["devices"]):
        npus.setdefault(dev // per_npu, []).append((dev % per_npu, dev))
    return sorted(npus.items())


def info_list(state: dict) -> str:
    npus = _npus(state)
    lines = ["%-31s: %d" % ("Total Count", len(npus)), ""]
    for npu, chips in npus:
        lines.append("%-31s: %d" % ("NPU ID", npu))
        lines.append("%-31s: %d" % ("Chip Count", len(chips)))
        lines.append("")
    return "\n".join(lines) + "\n"


# --- processes -------------------------------------------------------------------------------


def _environ(pid):
    try:
        with open("/proc/%s/environ" % pid, "rb") as f:
            data = f.read()
    except OSError:
        return None
    env = {}
    for item in data.split(b"\0"):
        key, sep, value = item.partition(b"=")
        if sep:
            env[key.decode("utf-8", "replace")] = value.decode("utf-8", "replace")
    return env


def _comm(pid):
    try:
        with open("/proc/%s/comm" % pid, encoding="utf-8", errors="replace") as f:
            return f.read().strip()
    except OSError:
        return None


def _rss_mb(pid):
    try:
        with open("/proc/%s/status" % pid, encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return max(1, int(line.split()[1]) // 1024)
    except (OSError, ValueError, IndexError):
        pass
    return 1


def _netns(pid):
    try:
        return os.readlink("/proc/%s/ns/net" % pid)
    except OSError:
        return None


def processes(state: dict, sdir: str, proc_root: str = "/proc") -> dict:
    """{device id: [(pid, name, memory MB), ...]} of the processes holding this host's devices."""
    me = os.getpid()
    bed = state.get("mode") == "bed"
    own_ns = _netns("self") if bed else None
    own_state = os.path.realpath(sdir)
    held: dict[int, list[tuple]] = {}
    try:
        pids = [p for p in os.listdir(proc_root) if p.isdigit()]
    except OSError:
        return held
    for pid in pids:
        if int(pid) == me:
            continue
        env = _environ(pid)
        if not env:
            continue
        device = env.get("ASCEND_DEVICE_ID")
        if device is None:
            device = env.get("DEVICE_ID")
        device = (device or "").strip()
        if not (device.isascii() and device.isdigit()) or str(int(device)) not in state["devices"]:
            continue
        comm = _comm(pid)
        if comm is None or comm in SHELLS:
            continue
        if bed:
            if _netns(pid) != own_ns:
                continue
        elif os.path.realpath(env.get("ASCEND_SIM_STATE") or DEFAULT_STATE_DIR) != own_state:
            continue
        held.setdefault(int(device), []).append((int(pid), comm, _rss_mb(pid)))
    for rows in held.values():
        rows.sort()
    return held


# --- the box table ---------------------------------------------------------------------------


def _usage(used, total, width):
    return ("%-5s/ %s" % (used, total)).ljust(width)


def info_table(state: dict, held: dict) -> str:
    chip = state["chip"]
    _default_name, per_npu, hbm_total = CHIP_INFO[chip]
    name = npu_name(state)
    version = driver_version(state)
    lay = layout(state)
    wide = lay is WIDE
    power_w, temp_w, huge_w = lay.sub
    bus = BUS_IDS[chip]
    lines = [lay.top]
    if wide:
        lines.append("| " + ("npu-smi %s" % version).ljust(44) + ("Version: %s" % version).ljust(lay.width - 47) + "|")
        lines.append(lay.cols)
        lines.append("| NPU   Name                | Health        | Power(W)             Temp(C)                 Hugepages-Usage(page)   |")
        chip_head = "Chip  Phy-ID" if per_npu > 1 else "Chip"
        lines.append("| %-26s| Bus-Id        | AICore(%%)            Memory-Usage(MB)        HBM-Usage(MB)           |" % chip_head)
    else:
        lines.append("| " + ("npu-smi %s" % version).ljust(33) + ("Version: %s" % version).ljust(lay.width - 36) + "|")
        lines.append(lay.cols)
        lines.append("| NPU   Name                | Health        | Power(W)    Temp(C)           Hugepages-Usage(page)|")
        if per_npu > 1:
            lines.append("| Chip  Phy-ID              | Bus-Id        | AICore(%)   Memory-Usage(MB)  HBM-Usage(MB)        |")
        else:
            lines.append("| Chip                      | Bus-Id        | AICore(%)   Memory-Usage(MB)  HBM-Usage(MB)        |")
    lines.append(lay.double)
    for npu, chips in _npus(state):
        for n, (chip_index, dev) in enumerate(chips):
            if n:
                lines.append(lay.top)
            power = "%.1f" % (88.0 + (dev * 37 % 130) / 10.0) if chip_index == 0 else "-"
            temp = "%d" % (38 + dev % 7)
            health = state["devices"][str(dev)].get("npu_health") or "OK"
            used = sum(mem for _pid, _name, mem in held.get(dev, ()))
            if chip == "910A":  # a first-generation board: its DDR in use, the HBM as processes hold it
                memory = _usage(2280 + dev * 13, 15039, temp_w)
                hbm = _usage(used, hbm_total, huge_w)
            else:
                memory = _usage(0, 0, temp_w)
                hbm = _usage(3300 + dev * 7 + used, hbm_total, huge_w)
            first = " %-6s%-20s" % (npu, name)
            second = " %-6s%-20s" % (chip_index, dev) if per_npu > 1 else " %-26s" % chip_index
            busid = "0000:%s:00.0" % (bus[dev] if dev < len(bus) else "%02X" % dev)
            lines.append("|%s| %-14s| %s%s%s|" % (first, health, power.ljust(power_w), temp.ljust(temp_w), _usage(0, 0, huge_w)))
            lines.append("|%s| %-14s| %s%s%s|" % (second, busid, "0".ljust(power_w), memory, hbm))
        lines.append(lay.double)
    lines.append(lay.cols)
    if wide:
        lines.append("| NPU     Chip              | Process id    | Process name       | Process memory(MB)    | Process id in container |")
    else:
        lines.append("| NPU     Chip              | Process id    | Process name             | Process memory(MB)      |")
    lines.append(lay.double)
    for npu, chips in _npus(state):
        rows = []
        for chip_index, dev in chips:
            for pid, pname, mem in held.get(dev, ()):
                if wide:  # a process of this (simulated) host: no PID in a container
                    rows.append("| %-8s%-18s| %-14s| %-19s| %-22s| %-24s|" % (npu, chip_index, pid, pname[:19], mem, "NA"))
                else:
                    rows.append("| %-8s%-18s| %-14s| %-25s| %-24s|" % (npu, chip_index, pid, pname[:25], mem))
        if rows:
            lines.extend(rows)
        else:
            lines.append("| " + ("No running processes found in NPU %d" % npu).ljust(lay.width - 3) + "|")
        lines.append(lay.double)
    return "\n".join(lines) + "\n"


def health(state: dict, devices: list) -> str:
    """``npu-smi info -t health -i <NPU> -c <chip>`` of the chip that is device ``devices[0]``, in the tab-indented layout of
    a training server's answer (tests/corpus/npu_smi/health_*_910a*.txt): its Health, and the error code and information a
    ``fault chip-health --code`` gave it (NA without)."""
    dev = state["devices"][str(devices[0])]
    fields = (
        ("Health Status", dev.get("npu_health") or "OK"),
        ("Error Code", dev.get("npu_error_code") or "NA"),
        ("Error Information", dev.get("npu_error_info") or "NA"),
    )
    return "".join("\t%-31s: %s\n" % field for field in fields)


def main(argv: list | None = None, default_state: str | None = None) -> int:
    """Entry point of ``bin/npu-smi`` and of the installed wrappers."""
    if argv is None:
        argv = sys.argv[1:]
    sdir = state_dir(default_state)
    try:
        state = load(sdir)
        if argv == ["info", "-l"]:
            sys.stdout.write(info_list(state))
            return 0
        if argv == ["info"]:
            sys.stdout.write(info_table(state, processes(state, sdir)))
            return 0
        if len(argv) == 5 and argv[:4] == ["info", "-t", "board", "-i"]:
            npus = dict(_npus(state))
            if argv[4].isdigit() and int(argv[4]) in npus:
                devs = [dev for _chip, dev in npus[int(argv[4])]]
                bus = BUS_IDS[state["chip"]]
                bus_id = "0000:%s:00.0" % (bus[devs[0]] if devs[0] < len(bus) else "%02X" % devs[0])
                sys.stdout.write(versions.board(state, int(argv[4]), devs, driver_version(state), bus_id))
                return 0
            sys.stderr.write("ascend-sim: no NPU %s here (npu-smi info -l lists the NPU ids)\n" % argv[4])
            return 1
        if len(argv) == 7 and argv[:4] == ["info", "-t", "health", "-i"] and argv[5] == "-c":
            npus = dict(_npus(state))
            chips = dict(npus.get(int(argv[4]), [])) if argv[4].isdigit() else {}
            if argv[6].isdigit() and int(argv[6]) in chips:
                sys.stdout.write(health(state, [chips[int(argv[6])]]))
                return 0
            sys.stderr.write("ascend-sim: no NPU %s chip %s here (npu-smi info -l lists the NPU ids)\n" % (argv[4], argv[6]))
            return 1
    except SimError as exc:
        sys.stderr.write("ascend-sim: %s\n" % exc)
        return 125
    sys.stderr.write(
        "ascend-sim: the simulated npu-smi supports `npu-smi info`, `npu-smi info -l`, `npu-smi info -t board -i N` and "
        "`npu-smi info -t health -i N -c C` (got: npu-smi %s)\n" % " ".join(argv)
    )
    return 1
