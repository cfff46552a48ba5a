"""The simulated ``npu-smi``: ``info -l`` and the ``info`` box table.

Layout of the box table (98 columns: 27 | 15 | 52) as printed by npu-smi 24.1 / 25.x on training
servers; A3 boards print two chips per NPU (``Chip  Phy-ID``) separated by a dashed line.

Processes: a process "holds" device N when its environment has ``ASCEND_DEVICE_ID=N`` (or,
without it, ``DEVICE_ID=N``) and its command is not a shell. It belongs to this host when, in
bed mode, it shares the caller's network namespace, and in fabric mode its
``ASCEND_SIM_STATE`` (default /etc/ascend-sim) is the caller's state directory.
"""

from __future__ import annotations

import os
import sys

from ._rt import DEFAULT_STATE_DIR, SimError, load, state_dir

SHELLS = ("sh", "bash", "dash")

# chip -> (npu-smi name, chips per NPU, HBM MB, version, bus ids by device index)
CHIP_INFO = {
    "910A": ("910A", 1, 32768, "24.1.0"),
    "910B": ("910B3", 1, 65536, "24.1.0"),
    "A3": ("Ascend910", 2, 65536, "25.3.rc1"),
}
BUS_IDS = {
    "910A": ("C1", "81", "41", "01", "C2", "82", "42", "02"),
    "910B": ("C1", "C2", "81", "82", "01", "02", "41", "42", "C3", "C4", "83", "84", "03", "04", "43", "44"),
    "A3": ("9D", "9F", "99", "9B", "B9", "BB", "B5", "B7", "1D", "1F", "19", "1B", "39", "3B", "35", "37"),
}

WIDTH = 98
RULE_TOP = "+" + "-" * (WIDTH - 2) + "+"
RULE_COLS = "+" + "-" * 27 + "+" + "-" * 15 + "+" + "-" * 52 + "+"
RULE_DOUBLE = "+" + "=" * 27 + "+" + "=" * 15 + "+" + "=" * 52 + "+"


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
    name, per_npu, hbm_total, version = CHIP_INFO[chip]
    version = state.get("npu_smi_version") or version
    bus = BUS_IDS[chip]
    lines = [RULE_TOP, "| " + ("npu-smi %s" % version).ljust(33) + ("Version: %s" % version).ljust(WIDTH - 36) + "|"]
    lines.append(RULE_COLS)
    lines.append("| NPU   Name                | Health        | Power(W)    Temp(C)           Hugepages-Usage(page)|")
    if per_npu > 1:
        lines.append("| Chip  Phy-ID              | Bus-Id        | AICore(%)   Memory-Usage(MB)  HBM-Usage(MB)        |")
    else:
        lines.append("| Chip                      | Bus-Id        | AICore(%)   Memory-Usage(MB)  HBM-Usage(MB)        |")
    lines.append(RULE_DOUBLE)
    for npu, chips in _npus(state):
        for n, (chip_index, dev) in enumerate(chips):
            if n:
                lines.append(RULE_TOP)
            power = "%.1f" % (88.0 + (dev * 37 % 130) / 10.0) if chip_index == 0 else "-"
            temp = "%d" % (38 + dev % 7)
            health = state["devices"][str(dev)].get("npu_health") or "OK"
            used = sum(mem for _pid, _name, mem in held.get(dev, ()))
            if chip == "910A":
                memory = _usage(2280 + dev * 13, 15039, 18)
                hbm = _usage(used, hbm_total, 21)
            else:
                memory = _usage(0, 0, 18)
                hbm = _usage(3300 + dev * 7 + used, hbm_total, 21)
            first = " %-6s%-20s" % (npu, name)
            second = " %-6s%-20s" % (chip_index, dev) if per_npu > 1 else " %-26s" % chip_index
            busid = "0000:%s:00.0" % (bus[dev] if dev < len(bus) else "%02X" % dev)
            lines.append("|%s| %-14s| %-12s%-18s%s|" % (first, health, power, temp, _usage(0, 0, 21)))
            lines.append("|%s| %-14s| %-12s%s%s|" % (second, busid, "0", memory, hbm))
        lines.append(RULE_DOUBLE)
    lines.append(RULE_COLS)
    lines.append("| NPU     Chip              | Process id    | Process name             | Process memory(MB)      |")
    lines.append(RULE_DOUBLE)
    for npu, chips in _npus(state):
        rows = []
        for chip_index, dev in chips:
            for pid, pname, mem in held.get(dev, ()):
                rows.append("| %-8s%-18s| %-14s| %-25s| %-24s|" % (npu, chip_index, pid, pname[:25], mem))
        if rows:
            lines.extend(rows)
        else:
            lines.append("| " + ("No running processes found in NPU %d" % npu).ljust(WIDTH - 3) + "|")
        lines.append(RULE_DOUBLE)
    return "\n".join(lines) + "\n"


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
                from . import versions

                driver = state.get("npu_smi_version") or CHIP_INFO[state["chip"]][3]
                sys.stdout.write(versions.board(state, int(argv[4]), [dev for _chip, dev in npus[int(argv[4])]], driver))
                return 0
            sys.stderr.write("ascend-sim: no NPU %s here (npu-smi info -l lists the NPU ids)\n" % argv[4])
            return 1
    except SimError as exc:
        sys.stderr.write("ascend-sim: %s\n" % exc)
        return 125
    sys.stderr.write(
        "ascend-sim: the simulated npu-smi supports `npu-smi info`, `npu-smi info -l` and `npu-smi info -t board -i N` (got: npu-smi %s)\n"
        % " ".join(argv)
    )
    return 1
