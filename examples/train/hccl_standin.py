"""HCCL stand-in: one rank of a ring all-reduce of real bytes over the device IPs, failing the way HCCL fails.

Run one process per device, as HCCL's users do (the launcher sets the environment):

    RANK_TABLE_FILE=/etc/ascend/rank_table.json RANK_ID=3 DEVICE_ID=3 \\
        python3 hccl_standin.py [--size-mb 4] [--iters 1] [--chip auto] [--step-log] [--hang-rank R --hang-step K]

What it does, in HCCL's order (docs/hccl-standin.md has the details and the sources of every text):

1. reads ``RANK_TABLE_FILE`` (or ``MINDSPORE_HCCL_CONFIG_PATH``), ``RANK_ID`` and ``DEVICE_ID``
   (or ``ASCEND_DEVICE_ID``) and checks the table as HCCL does (reference section 3);
2. takes its device (a lock file stands in for the device node: a second process on the same
   device fails with EJ0001);
3. listens on its own ``device_ip`` and the device port (the entry's ``device_port``, else 16666,
   HCCL's device port) and connects to its ring neighbours' device IPs, all within
   ``HCCL_CONNECT_TIMEOUT`` (default 120, range 120-7200; ``HCCL_STANDIN_ALLOW_SHORT_TIMEOUT=1``,
   a variable of the stand-in only, lets tests use a shorter one);
4. runs a hierarchical ring all-reduce of ``--size-mb`` MiB of pseudo-random bytes: a ring inside
   each server, then a ring per device plane across servers (ranks with the same local index, so
   every cross-server link stays inside one device subnet of a per-device-subnet plan), then the
   ring inside each server again; servers with different rank counts use one flat ring;
5. checks the result against the expected bytes, prints the bandwidth of each link it sent on and
   one ``HCCL_STANDIN_RESULT {json}`` line, and exits 0.

On a failure it writes a plog where CANN writes its plogs
(``$ASCEND_PROCESS_LOG_PATH/debug/plog/`` or ``$HOME/ascend/log/debug/plog/plog-<pid>_<time>.log``;
``ASCEND_SLOG_PRINT_TO_STDOUT=1`` prints the lines to stdout instead), prints the error-code
block (``EI0006: [PID: n] <time> ...``) to stderr, then one line naming the cause, and exits 1.

Python 3.8+, standard library only: it runs on the target servers.
"""

from __future__ import annotations

import argparse
import errno
import hashlib
import ipaddress
import json
import os
import random
import re
import shutil
import socket
import struct
import subprocess
import sys
import threading
import time
from typing import Callable, NamedTuple

try:
    import fcntl
except ImportError:  # pragma: no cover - not a POSIX system
    fcntl = None  # type: ignore[assignment]

# HCCL's device port (reference section 7: "listen on ip[...] and specific port[16666] fail").
DEVICE_PORT = 16666
# Reference section 3: chip -> (rank table version, highest device id). A copy of the chip profiles the collection
# owns in plugins/module_utils/_npu/chip.py (this file runs alone on a server and imports nothing of the collection);
# tests/unit/test_hccl_standin.py fails when the two differ. A chip the collection does not know (A5, whose
# device ids the reference does not give) is refused by --chip, and its version 2.0 table is read unmatched.
CHIPS = {"910A": ("1.0", 7), "910B": ("1.0", 15), "A3": ("1.2", 15)}
ANY_CHIP_MAX_DEVICE_ID = max(highest for _version, highest in CHIPS.values())
# Reference section 4: HCCL_CONNECT_TIMEOUT default and range.
CONNECT_TIMEOUT_DEFAULT = 120
CONNECT_TIMEOUT_RANGE = (120, 7200)
EXEC_TIMEOUT_DEFAULT = 1836
# The stand-in's own variables (HCCL has none of these).
SHORT_TIMEOUT_VAR = "HCCL_STANDIN_ALLOW_SHORT_TIMEOUT"
LOCK_DIR_VAR = "HCCL_STANDIN_LOCK_DIR"
RESULT_PREFIX = "HCCL_STANDIN_RESULT"
INVALID_IP = "-.-.-.-"
# The handshake a connecting rank sends first: magic, ring number, its rank, the rank it wants.
HELLO = struct.Struct("!4sIII")
MAGIC = b"HCSI"
PIECE = 1 << 20  # bytes per send/recv call


class Rank(NamedTuple):
    rank_id: int
    server_id: str
    device_id: int
    device_ip: str
    device_port: int


class Ring(NamedTuple):
    """One ring the rank takes part in: ``number`` tells rings apart on the wire."""

    number: int
    name: str
    members: tuple  # rank ids in ring order


class Link(NamedTuple):
    ring: Ring
    local: Rank
    remote: Rank
    outgoing: bool  # True: this rank connects (HCCL's client role); False: it accepts


class HcclError(Exception):
    """A failure as HCCL reports it: the error code, its stderr block, the plog lines, one cause line."""

    def __init__(self, code: str, reason: str, log_lines: list, cause: str, detail: list | None = None) -> None:
        super().__init__(cause)
        self.code = code  # "" when HCCL's code for this failure is not known (the stand-in prints no block)
        self.reason = reason  # the text after "<code>: [PID: n] <time> "
        self.log_lines = log_lines  # [(source "file:line", text)] for the plog, level ERROR
        self.cause = cause  # the stand-in's one-line summary, last on stderr
        self.detail = detail or []  # lines printed after the block (LINK_ERROR_INFO)


# --------------------------------------------------------------------------- texts and formats


def cann_time(when: float) -> str:
    """CANN's timestamp: ``2025-07-23-03:49:57.177.194`` (reference section 7)."""
    micros = round(when * 1e6) % 1000000
    return time.strftime("%Y-%m-%d-%H:%M:%S", time.localtime(when)) + ".%03d.%03d" % (micros // 1000, micros % 1000)


def plog_line(level: str, pid: int, pname: str, when: float, source: str, text: str) -> str:
    """``[LEVEL] HCCL(PID,PNAME):YYYY-MM-DD-hh:mm:ss.mmm.uuu [file.cc:LINE]text`` (reference section 7)."""
    return "[%s] HCCL(%d,%s):%s [%s]%s" % (level, pid, pname, cann_time(when), source, text)


def plog_path(env: dict, pid: int, when: float) -> str:
    """Where CANN writes this process's plog (reference section 7).

    ``$HOME/ascend/log/debug/plog/``; ``ASCEND_PROCESS_LOG_PATH`` replaces ``$HOME/ascend/log``.
    The ``<timestamp>`` of the file name is not spelled out by the reference: the stand-in uses
    ``YYYYMMDDhhmmssmmm`` (its own choice).
    """
    root = env.get("ASCEND_PROCESS_LOG_PATH") or os.path.join(env.get("HOME") or os.path.expanduser("~"), "ascend", "log")
    stamp = time.strftime("%Y%m%d%H%M%S", time.localtime(when)) + "%03d" % (int(when * 1000) % 1000)
    return os.path.join(root, "debug", "plog", "plog-%d_%s.log" % (pid, stamp))


def error_block(error: HcclError, pid: int, when: float) -> list:
    """The lines HCCL prints to stderr for ``error``: the code block, then the stand-in's detail and cause."""
    lines = []
    if error.code:
        lines.append("%s: [PID: %d] %s %s" % (error.code, pid, cann_time(when), error.reason))
        solution = SOLUTIONS.get(error.code)
        if solution:
            lines.append("        Solution: " + solution)
    lines.extend(error.detail)
    lines.append("hccl_standin: " + error.cause)
    return lines


# EI0006's text is the reference's (section 7), the elided parts of its Solution kept as "...".
# The other blocks' texts are the stand-in's own wording around the fragments the reference quotes.
EI0006_REASON = (
    "Getting socket times out. Reason: Remote Rank did not send the data in time. Please check the reason for the rank being stuck"
)
SOLUTIONS = {
    "EI0006": "1. ... 2. If this error is reported for all NPUs, check whether the time difference between the earliest and latest "
    "errors is greater than the connect timeout interval (120s by default) ...",
}
# Reference section 3, verbatim.
RANK_ID_TEXT = "The 'rank_id' in the ranktable must start from 0 or it is used repeatedly"
DEVICE_IP_TEXT = "device_ip is invalid in ranktable"


def table_error(text: str, path: str) -> HcclError:
    """A rank table HCCL refuses: EI0014 (the reference's "EI0014-style table errors"), Config_Error_Ranktable."""
    return HcclError(
        "EI0014",
        "%s (rank table %s). Config_Error_Ranktable" % (text, path),  # stand-in wording around the reference's text
        [("hccl_standin.py:table", text)],
        "rank table %s refused (EI0014): %s" % (path, text),
    )


def device_busy_error(device: int, holder: str) -> HcclError:
    """EJ0001: the device is held by another process; only the last sentence is the reference's."""
    text = "Device %d is held by process %s. Maybe the last training process is running" % (device, holder or "?")
    return HcclError(
        "EJ0001",
        text,
        [("hccl_standin.py:device", text)],
        "device %d is in use by process %s (EJ0001): stop it (and wait ~10 s) before starting this rank" % (device, holder or "?"),
    )


def listen_error(ip: str, port: int, reason: str) -> HcclError:
    """EI0019: the device port cannot be listened on (in use, or the IP is not this host's)."""
    text = "listen on ip[%s] and specific port[%d] fail" % (ip, port)  # the reference's HCCL log text
    return HcclError(
        "EI0019",
        "%s: %s" % (text, reason),  # the code is the reference's "EI0019 / EJ0003"; the stand-in prints EI0019
        [("hccl_socket.cc:listen", text)],
        "cannot listen on %s:%d (EI0019): %s" % (ip, port, reason),
    )


def link_error_info(links: list) -> list:
    """``LINK_ERROR_INFO`` (reference section 7: local/remote rank, IPs, ports); the table layout is the stand-in's own."""
    rows = [("local_rank", "local_ip", "local_port", "remote_rank", "remote_ip", "remote_port", "role")]
    for link in links:
        rows.append(
            (
                str(link.local.rank_id),
                link.local.device_ip,
                str(link.local.device_port),
                str(link.remote.rank_id),
                link.remote.device_ip,
                str(link.remote.device_port),
                "client" if link.outgoing else "server",
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return ["LINK_ERROR_INFO:"] + ["    " + "  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip() for row in rows]


def plog_link_error_info(me: Rank, links: list, thread: int) -> list:
    """The plog's ``LINK_ERROR_INFO`` table as HCCL prints it (CANN 8.x; HCCL user guide, 建链超时（EI0006）): one plog
    line per row, the destination (the peer) first, ``dest_ip(user_rank) | dest_port | src_ip(user_rank) | src_port |
    MyRole | Status``."""
    rows = [
        "   _________________________LINK_ERROR_INFO___________________________",
        "   |  comm error, device[%d]" % me.device_id,
        "   |  dest_ip(user_rank)  |   dest_port   |  src_ip(user_rank)   |   src_port   |   MyRole   |   Status   |",
        "   |----------------------|---------------|----------------------|--------------|------------|------------|",
    ]
    for link in links:
        rows.append(
            "   |  %s(%d)   |  %d  |   %s(%d)   |  0  |  %s  | time out |"
            % (
                link.remote.device_ip,
                link.remote.rank_id,
                link.remote.device_port,
                me.device_ip,
                me.rank_id,
                "client" if link.outgoing else "server",
            )
        )
    rows.append("   ___________________________________________________________________")
    return [("hccl_socket_manager.cc:591", " [%d]%s" % (thread, row)) for row in rows]


def socket_timeout_error(me: Rank, links: list, timeout: float, lost: str = "") -> HcclError:
    """EI0006 for the links that did not come up in ``timeout`` seconds (or, with ``lost``, broke later), naming their IPs."""
    thread = threading.get_native_id()
    log = [
        (
            # The reference's example line; role[0] server (accepting), role[1] client (connecting) is the stand-in's reading.
            # rank[N] is the waiting rank itself, as HCCL prints it (its LINK_ERROR_INFO's src_ip(user_rank)).
            "hccl_socket_manager.cc:778",
            " [%d][Wait][LinkEstablish]wait socket establish timeout, role[%d] rank[%d] timeout[%d]"
            % (thread, 1 if link.outgoing else 0, me.rank_id, int(timeout)),
        )
        for link in links
    ] + plog_link_error_info(me, links, thread)
    if lost:
        log = [("hccl_standin.py:exec", " link to rank %d lost: %s" % (link.remote.rank_id, lost)) for link in links]
    peers = ", ".join(
        "rank %d %s:%d" % (link.remote.rank_id, link.remote.device_ip, link.remote.device_port) for link in _unique_remotes(links)
    )
    if lost:
        what = "lost its link to %s during the all-reduce: %s" % (peers, lost)
    else:
        what = "got no link to %s within HCCL_CONNECT_TIMEOUT=%gs - check that link, its firewall and that every rank started in time" % (
            peers,
            timeout,
        )
    return HcclError(
        "EI0006",
        EI0006_REASON,
        log,
        "EI0006 socket timeout: rank %d (device %d, %s) %s" % (me.rank_id, me.device_id, me.device_ip, what),
        link_error_info(links),
    )


def _unique_remotes(links: list) -> list:
    seen, out = set(), []
    for link in links:
        if link.remote.rank_id not in seen:
            seen.add(link.remote.rank_id)
            out.append(link)
    return out


def usage_error(text: str) -> HcclError:
    """A launch environment the stand-in cannot use; HCCL's code for these is not known (no block)."""
    return HcclError("", text, [("hccl_standin.py:env", text)], text)


# --------------------------------------------------------------------------- rank table


def _int(value: object, what: str, path: str) -> int:
    try:
        return int(str(value))
    except ValueError:
        raise table_error("%s %r is not a number" % (what, value), path) from None


def parse_rank_table(text: str, path: str, chip: str | None = None) -> list:
    """The ranks of a version 1.0 / 1.2 / 2.0 table, sorted by rank id, checked as HCCL checks them.

    ``chip`` (910A, 910B, A3; None when unknown) decides the version HCCL accepts and the highest device id. Raises
    HcclError (EI0014) naming the first problem.
    """
    try:
        table = json.loads(text)
    except ValueError as exc:
        raise table_error("the rank table is not valid JSON (%s)" % exc, path) from None
    if not isinstance(table, dict):
        raise table_error("the rank table is not a JSON object", path)
    if "version" not in table and "group_list" in table:
        raise table_error("template 2 (v0.x) tables are not read by the HCCL stand-in; use version 1.0", path)
    version = str(table.get("version", ""))
    if version not in ("1.0", "1.2", "2.0"):
        raise table_error("rank table version %r is not supported" % version, path)
    if chip in CHIPS and CHIPS[chip][0] != version:
        raise table_error("rank table version %s does not match chip %s, which reads version %s" % (version, chip, CHIPS[chip][0]), path)
    if table.get("status", "completed") != "completed":
        raise table_error("rank table status is %r, not 'completed'" % table.get("status"), path)
    servers = table.get("server_list")
    if not isinstance(servers, list) or not servers:
        raise table_error("server_list is missing or empty", path)
    if "server_count" in table and _int(table["server_count"], "server_count", path) != len(servers):
        raise table_error("server_count %s does not match the %d entries of server_list" % (table["server_count"], len(servers)), path)
    server_ids = [str(s.get("server_id", "")) for s in servers if isinstance(s, dict)]
    if len(server_ids) != len(servers) or len(set(server_ids)) != len(server_ids):
        raise table_error("server_id is missing or used twice in server_list", path)
    ranks = []
    max_device = CHIPS[chip][1] if chip in CHIPS else ANY_CHIP_MAX_DEVICE_ID
    for server in servers:
        for device in server.get("device") or []:
            device_id = _int(device.get("device_id"), "device_id", path)
            if not 0 <= device_id <= max_device:
                raise table_error("device_id %d is out of range 0-%d for chip %s" % (device_id, max_device, chip or "?"), path)
            if version == "1.2" and not str(device.get("super_device_id", "")).strip():
                raise table_error("super_device_id is empty for device %d of server %s" % (device_id, server["server_id"]), path)
            ip = str(device.get("device_ip", "")).strip()
            if ip or len(servers) > 1:
                try:
                    ipaddress.IPv4Address(ip)
                except ValueError:
                    raise table_error(
                        "%s: device %d of server %s has %r" % (DEVICE_IP_TEXT, device_id, server["server_id"], ip), path
                    ) from None
            port = _int(device.get("device_port", DEVICE_PORT), "device_port", path)
            ranks.append(Rank(_int(device.get("rank_id"), "rank_id", path), str(server["server_id"]), device_id, ip, port))
    if sorted(r.rank_id for r in ranks) != list(range(len(ranks))):
        raise table_error(RANK_ID_TEXT, path)
    return sorted(ranks)


def local_address(rank: Rank) -> Rank:
    """A single-server table may leave device_ip out (HCCS); the stand-in then uses 127.0.0.1 and port 16666 + device."""
    if rank.device_ip:
        return rank
    return rank._replace(device_ip="127.0.0.1", device_port=rank.device_port + rank.device_id)


# --------------------------------------------------------------------------- rings and schedule


def plan_rings(ranks: list) -> list:
    """The rings of the all-reduce, in order, with how each is used: ``[(kind, Ring)]``.

    ``kind``: ``rs`` reduce-scatter, ``ag`` all-gather, ``ar`` all-reduce of the chunk the rank owns
    after the ``rs``. Servers keep the table's order; ranks inside a server go by rank id.
    """
    servers: dict = {}
    for rank in sorted(ranks):
        servers.setdefault(rank.server_id, []).append(rank.rank_id)
    groups = list(servers.values())
    flat = Ring(0, "ring", tuple(r.rank_id for r in sorted(ranks)))
    if len(groups) == 1:
        return [("rs", flat._replace(name="server ring")), ("ag", flat._replace(name="server ring"))]
    if len({len(g) for g in groups}) != 1:
        return [("rs", flat), ("ag", flat)]
    per_server = len(groups[0])
    intra = [Ring(1 + s, "server ring", tuple(g)) for s, g in enumerate(groups)]
    planes = [Ring(1 + len(groups) + i, "plane %d ring" % i, tuple(g[i] for g in groups)) for i in range(per_server)]
    if per_server == 1:
        return [("ar", plane) for plane in planes]
    return [("rs", ring) for ring in intra] + [("ar", plane) for plane in planes] + [("ag", ring) for ring in intra]


def my_rings(plan: list, rank_id: int) -> list:
    """The rings of ``plan`` this rank takes part in, each once (rings of one member need no links)."""
    rings: list = []
    for _kind, ring in plan:
        if rank_id in ring.members and len(ring.members) > 1 and ring not in rings:
            rings.append(ring)
    return rings


def reduce_scatter_steps(pos: int, n: int) -> list:
    """``[(send_chunk, recv_chunk)]`` of ring position ``pos``; it ends owning chunk ``(pos + 1) % n``."""
    return [((pos - s) % n, (pos - s - 1) % n) for s in range(n - 1)]


def all_gather_steps(pos: int, n: int) -> list:
    """``[(send_chunk, recv_chunk)]`` after the reduce-scatter: pass the owned chunks round the ring."""
    return [((pos + 1 - s) % n, (pos - s) % n) for s in range(n - 1)]


def chunks(lo: int, hi: int, n: int) -> list:
    """``n`` near-equal ``(start, end)`` pieces of ``[lo, hi)``."""
    size = hi - lo
    return [(lo + i * size // n, lo + (i + 1) * size // n) for i in range(n)]


def xor_into(buf: bytearray, start: int, data: bytes) -> None:
    """``buf[start:start+len(data)] ^= data`` (XOR is the reduction: exact and quick in pure Python)."""
    if not data:
        return
    mine = int.from_bytes(bytes(buf[start : start + len(data)]), "little")
    buf[start : start + len(data)] = (mine ^ int.from_bytes(data, "little")).to_bytes(len(data), "little")


Exchange = Callable[[Ring, bytes, int], bytes]


def ring_pass(kind: str, ring: Ring, rank_id: int, buf: bytearray, region: tuple, exchange: Exchange) -> tuple:
    """One ring phase over ``region`` of ``buf``; returns the region this rank owns afterwards.

    ``exchange(ring, data, nbytes)`` sends ``data`` to the next rank and returns ``nbytes`` from the previous one.
    """
    n = len(ring.members)
    if n == 1:
        return region
    pos = ring.members.index(rank_id)
    pieces = chunks(region[0], region[1], n)
    if kind in ("rs", "ar"):
        for send, recv in reduce_scatter_steps(pos, n):
            lo, hi = pieces[recv]
            xor_into(buf, lo, exchange(ring, bytes(buf[pieces[send][0] : pieces[send][1]]), hi - lo))
        owned = pieces[(pos + 1) % n]
        if kind == "rs":
            return owned
    for send, recv in all_gather_steps(pos, n):
        lo, hi = pieces[recv]
        buf[lo:hi] = exchange(ring, bytes(buf[pieces[send][0] : pieces[send][1]]), hi - lo)
    return region


def allreduce(plan: list, rank_id: int, buf: bytearray, exchange: Exchange) -> None:
    """XOR all-reduce of ``buf`` along ``plan`` (see plan_rings); ``buf`` ends holding every rank's XOR."""
    region = (0, len(buf))
    whole = region
    for kind, ring in plan:
        if rank_id not in ring.members:
            continue
        if kind == "rs":
            region = ring_pass("rs", ring, rank_id, buf, whole, exchange)
        elif kind == "ar":
            ring_pass("ar", ring, rank_id, buf, region, exchange)
        else:
            ring_pass("ag", ring, rank_id, buf, whole, exchange)


def rank_data(rank_id: int, size: int, seed: int = 2024) -> bytes:
    """Rank ``rank_id``'s bytes: one pseudo-random block (the same on every rank) rotated by a per-rank offset."""
    base = random.Random(seed).getrandbits(size * 8).to_bytes(size, "little") if size else b""
    shift = (rank_id * 4099) % size if size else 0
    return base[shift:] + base[:shift]


def expected_result(rank_count: int, size: int, seed: int = 2024) -> bytes:
    total = 0
    for rank_id in range(rank_count):
        total ^= int.from_bytes(rank_data(rank_id, size, seed), "little")
    return total.to_bytes(size, "little")


# --------------------------------------------------------------------------- environment


def connect_timeout(env: dict) -> float:
    """``HCCL_CONNECT_TIMEOUT`` in seconds, range-checked like HCCL unless the stand-in-only variable relaxes it."""
    raw = env.get("HCCL_CONNECT_TIMEOUT", "") or str(CONNECT_TIMEOUT_DEFAULT)
    try:
        value = float(raw)
    except ValueError:
        raise usage_error("HCCL_CONNECT_TIMEOUT=%s is not a number of seconds" % raw) from None
    low, high = CONNECT_TIMEOUT_RANGE
    if env.get(SHORT_TIMEOUT_VAR) == "1":
        low = 1
    if not low <= value <= high:
        raise usage_error(
            "HCCL_CONNECT_TIMEOUT=%s is outside %d-%d seconds (%s=1 lets the stand-in, and only it, take shorter ones)"
            % (raw, CONNECT_TIMEOUT_RANGE[0], high, SHORT_TIMEOUT_VAR)
        )
    return value


def launch_env(env: dict) -> tuple:
    """``(table_path, rank_id, device_id)`` from the environment HCCL reads."""
    path = env.get("RANK_TABLE_FILE") or env.get("MINDSPORE_HCCL_CONFIG_PATH") or ""
    if not path:
        raise usage_error("RANK_TABLE_FILE is not set: HCCL needs the rank table's path")
    values = []
    for names in (("RANK_ID",), ("DEVICE_ID", "ASCEND_DEVICE_ID")):
        raw = next((env[n] for n in names if env.get(n, "") != ""), None)
        if raw is None or not raw.strip().isdigit():
            raise usage_error(
                "%s is %s: set it to this process's %s" % (names[0], "not set" if raw is None else repr(raw), names[0].lower())
            )
        values.append(int(raw))
    return path, values[0], values[1]


_NPU_ROW = re.compile(r"^\|\s*(\d+)\s+(\S+)\s*\|\s*(?:OK|Warning|Alarm|Critical|UNKNOWN)\s*\|", re.M)
# The second header row of the NPU table names each chip's Phy-ID on boards with several chips per NPU (A3).
_PHY_ID_HEADER = re.compile(r"^\|\s*Chip\s+Phy-ID\s*\|", re.M)


def chip_from_name(name: str, phy_ids: bool = False) -> str | None:
    """910A / 910B / A3 from an ``npu-smi info`` Name, as the collection reads it (a copy of
    ``plugins/module_utils/_npu/chip.py``'s ``npu_smi_chip``, MindCluster's rule): ``910B1``..``910B4``, ``910B2C``, ``A2G1``
    are A2 (910B); any other name beginning ``910`` - ``910A``, ``910ProB``, the bare ``910B`` - the first-generation 910
    (910A); ``910_93xx`` and, with a Phy-ID column (``phy_ids``), the generic ``Ascend910`` are A3; else None."""
    text = name.strip()
    if text == "Ascend910":
        return "A3" if phy_ids else None
    rest = re.sub(r"^Ascend[ _]?", "", text) if text.startswith("Ascend") else text
    if re.match(r"^910_93", rest):
        return "A3"
    if re.match(r"^(910B\d|A2G\d)", rest):
        return "910B"
    if rest.startswith("910"):
        return "910A"
    return None


def chip_from_info(out: str) -> str | None:
    """The chip from ``npu-smi info``'s NPU table (the first NPU row's Name), None when it has no NPU row or its name
    does not say which chip. A3 boards print the generic name ``Ascend910``: they are the boards with two chips per
    NPU, a ``Chip  Phy-ID`` header and each NPU id on two rows."""
    rows = _NPU_ROW.findall(out)
    if not rows:
        return None
    npu_ids = [npu for npu, _name in rows]
    return chip_from_name(rows[0][1], bool(_PHY_ID_HEADER.search(out)) or len(set(npu_ids)) < len(npu_ids))


def detect_chip() -> str | None:
    """The chip from ``npu-smi info`` (:func:`chip_from_info`), None when there is no npu-smi or no row."""
    npu_smi = shutil.which("npu-smi") or "/usr/local/sbin/npu-smi"
    if not os.path.exists(npu_smi):
        return None
    try:
        out = subprocess.run([npu_smi, "info"], capture_output=True, text=True, timeout=30, check=False).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    return chip_from_info(out)


def take_device(device: int, env: dict) -> object:
    """Hold the device for this process's life (a lock file stands in for the device node)."""
    lock_dir = env.get(LOCK_DIR_VAR) or "/tmp"
    path = os.path.join(lock_dir, "hccl-standin-device%d.lock" % device)
    try:
        handle = os.fdopen(os.open(path, os.O_RDWR | os.O_CREAT, 0o644), "r+")  # held open for the process's life
    except OSError as exc:
        raise usage_error(
            "cannot open the device lock %s (%s): set %s to a directory this user can write" % (path, exc.strerror, LOCK_DIR_VAR)
        ) from None
    if fcntl is None:
        return handle
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        handle.seek(0)
        raise device_busy_error(device, handle.read().strip()) from None
    handle.seek(0)
    handle.truncate()
    handle.write(str(os.getpid()))
    handle.flush()
    return handle


# --------------------------------------------------------------------------- links


class Links:
    """The rank's sockets: one listener on its device IP, one socket per ring direction."""

    def __init__(self, me: Rank, by_id: dict, rings: list, deadline: float, timeout: float) -> None:
        self.me, self.deadline, self.timeout = me, deadline, timeout
        self.wanted: list = []
        for ring in rings:
            pos = ring.members.index(me.rank_id)
            n = len(ring.members)
            self.wanted.append(Link(ring, me, by_id[ring.members[(pos + 1) % n]], True))
            self.wanted.append(Link(ring, me, by_id[ring.members[(pos - 1) % n]], False))
        self.socks: dict = {}  # (ring number, outgoing) -> socket
        self.lock = threading.Lock()
        self.last_error: dict = {}

    def listen(self) -> socket.socket:
        server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        # Old connections in TIME_WAIT do not block the port; another listener still does (EADDRINUSE).
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            server.bind((self.me.device_ip, self.me.device_port))
            server.listen(64)
        except OSError as exc:
            server.close()
            reason = (
                "the port is in use"
                if exc.errno == errno.EADDRINUSE
                else "%s (is %s this host's device IP?)" % (exc.strerror, self.me.device_ip)
            )
            raise listen_error(self.me.device_ip, self.me.device_port, reason) from None
        return server

    def _accept(self, server: socket.socket) -> None:
        expected = {(link.ring.number, link.remote.rank_id) for link in self.wanted if not link.outgoing}
        while expected and time.monotonic() < self.deadline:
            server.settimeout(max(0.05, min(0.5, self.deadline - time.monotonic())))
            try:
                conn, _addr = server.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            try:
                conn.settimeout(max(0.5, self.deadline - time.monotonic()))
                magic, number, sender, target = HELLO.unpack(_recv_exact(conn, HELLO.size))
            except (OSError, ConnectionError, struct.error):
                conn.close()
                continue
            if magic != MAGIC or target != self.me.rank_id or (number, sender) not in expected:
                conn.close()
                continue
            expected.discard((number, sender))
            with self.lock:
                self.socks[(number, False)] = conn

    def _connect(self, link: Link) -> None:
        while time.monotonic() < self.deadline:
            left = self.deadline - time.monotonic()
            try:
                conn = socket.create_connection(
                    (link.remote.device_ip, link.remote.device_port),
                    timeout=max(0.05, min(2.0, left)),
                    source_address=(self.me.device_ip, 0),
                )
                conn.sendall(HELLO.pack(MAGIC, link.ring.number, self.me.rank_id, link.remote.rank_id))
            except OSError as exc:
                self.last_error[link.ring.number] = str(exc)
                time.sleep(min(0.2, max(0.0, self.deadline - time.monotonic())))
                continue
            with self.lock:
                self.socks[(link.ring.number, True)] = conn
            return

    def establish(self) -> None:
        """Every wanted link up by the deadline, else EI0006 naming the ones that are not."""
        server = self.listen()
        threads = [threading.Thread(target=self._accept, args=(server,), daemon=True)]
        threads += [threading.Thread(target=self._connect, args=(link,), daemon=True) for link in self.wanted if link.outgoing]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(max(0.0, self.deadline - time.monotonic()) + 5.0)
        server.close()
        missing = [link for link in self.wanted if (link.ring.number, link.outgoing) not in self.socks]
        if missing:
            raise socket_timeout_error(self.me, missing, self.timeout)
        for conn in self.socks.values():
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def link(self, ring: Ring, outgoing: bool) -> Link:
        return next(link for link in self.wanted if link.ring.number == ring.number and link.outgoing == outgoing)


def _recv_exact(conn: socket.socket, nbytes: int) -> bytes:
    data = bytearray(nbytes)
    view = memoryview(data)
    got = 0
    while got < nbytes:
        n = conn.recv_into(view[got:], min(PIECE, nbytes - got))
        if n == 0:
            raise ConnectionError("the peer closed the link")
        got += n
    return bytes(data)


class Transport:
    """exchange() for allreduce over the established links, counting bytes and step time per outgoing link."""

    def __init__(self, links: Links, exec_timeout: float) -> None:
        self.links = links
        self.exec_timeout = exec_timeout
        self.sent: dict = {}  # ring number -> [bytes, seconds]

    def exchange(self, ring: Ring, data: bytes, nbytes: int) -> bytes:
        """Send to the next rank while receiving from the previous; the step's wall time counts for the outgoing link."""
        out = self.links.socks[(ring.number, True)]
        inc = self.links.socks[(ring.number, False)]
        out.settimeout(self.exec_timeout)
        inc.settimeout(self.exec_timeout)
        failure: list = []

        def send() -> None:
            try:
                out.sendall(data)
            except OSError as exc:
                failure.append(exc)

        started = time.monotonic()
        sender = threading.Thread(target=send, daemon=True)
        sender.start()
        try:
            got = _recv_exact(inc, nbytes)
        except (OSError, ConnectionError) as exc:
            raise self._failed(ring, False, exc, started) from None
        sender.join()
        if failure:
            raise self._failed(ring, True, failure[0], started)
        tally = self.sent.setdefault(ring.number, [0, 0.0])
        tally[0] += len(data)
        tally[1] += time.monotonic() - started
        return got

    def _failed(self, ring: Ring, outgoing: bool, exc: Exception, started: float) -> HcclError:
        """EI0006 for a link that broke mid-collective.

        Like a rank on hardware whose peer died, the rank does not fail at once: it waits out
        HCCL_EXEC_TIMEOUT from the step's start (the launcher's fail-fast stops it long before), so
        the rank that failed first - and its cause - is the one that reports.
        """
        if isinstance(exc, socket.timeout):
            why = "no data within HCCL_EXEC_TIMEOUT=%gs" % self.exec_timeout
        else:
            time.sleep(max(0.0, started + self.exec_timeout - time.monotonic()))
            why = "%s (then no data within HCCL_EXEC_TIMEOUT=%gs)" % (exc, self.exec_timeout)
        return socket_timeout_error(self.links.me, [self.links.link(ring, outgoing)], self.exec_timeout, why)


# --------------------------------------------------------------------------- checkpoints and restarts
#
# The file helpers here (write_atomically, checkpoint_files, newest_checkpoint, prune_checkpoints, fail_once,
# restart_count) are also train_gloo.py's, which imports them from beside it: this file stays one
# standard-library file, as the smoke check copies it alone to the servers.

CHECKPOINT_FORMAT = "hccl_standin checkpoint 1"
CHECKPOINT_NAME = re.compile(r"^step_(\d+)\.json$")
CHECKPOINTS_KEPT = 2  # the newest and the one before it (to resume from when the newest is damaged)
RESTART_COUNT_VARS = ("ASCEND_RESTART_COUNT", "TORCHELASTIC_RESTART_COUNT")
BROADCAST_BYTES = 4096  # rank 0's checkpoint message, sent to every rank as an XOR all-reduce with zeros


def restart_count(env: dict) -> str | None:
    """``N`` from the launch's ``ASCEND_RESTART_COUNT``, else torchrun's ``TORCHELASTIC_RESTART_COUNT``; None when neither is set."""
    for name in RESTART_COUNT_VARS:
        if env.get(name, "") != "":
            return env[name]
    return None


def fail_once(path: str) -> bool:
    """True the first time only: creates ``path`` (O_EXCL, so of racing ranks one wins); False when it exists already."""
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
    except FileExistsError:
        return False
    return True


def checkpoint_files(directory: str, pattern: re.Pattern) -> list:
    """``[(step, path)]`` of the names in ``directory`` that ``pattern`` (group 1: the step) matches, oldest first.

    Temporary files (``.<name>.tmp-<pid>``, left by a writer that died) never match: they are not checkpoints.
    """
    try:
        names = os.listdir(directory)
    except FileNotFoundError:
        return []
    found = []
    for name in names:
        match = pattern.match(name)
        if match:
            found.append((int(match.group(1)), os.path.join(directory, name)))
    return sorted(found)


def write_atomically(path: str, data: bytes, mode: int = 0o644) -> None:
    """``data`` to ``path`` whole or not at all: a temporary file of ``mode`` beside it, fsync, rename, fsync of the directory.

    The collection's own ``module_utils/_host/text_file.write_text_atomic`` does the same for text; this
    file cannot import it (it runs alone on the servers).
    """
    directory = os.path.dirname(path) or "."
    os.makedirs(directory, mode=0o755, exist_ok=True)
    tmp = os.path.join(directory, ".%s.tmp-%d" % (os.path.basename(path), os.getpid()))
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fchmod(handle.fileno(), mode)  # whatever the umask
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    dir_fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(dir_fd)  # the rename survives a crash too
    finally:
        os.close(dir_fd)


def prune_checkpoints(directory: str, pattern: re.Pattern, keep: int = CHECKPOINTS_KEPT) -> None:
    for _step, old in checkpoint_files(directory, pattern)[:-keep]:
        os.unlink(old)


def checkpoint_error(text: str) -> HcclError:
    """A checkpoint that must not be resumed from (no HCCL code: the stand-in's own failure)."""
    return HcclError("", text, [("hccl_standin.py:checkpoint", text)], text)


def _checkpoint_sum(fields: dict) -> str:
    return hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()


def encode_checkpoint(step: int, state: bytes, ranks: int, size: int, seed: int) -> bytes:
    """The checkpoint's JSON: the step, the state (sha256 chain), the job's shape, and the sha256 of all of these."""
    fields = {"format": CHECKPOINT_FORMAT, "step": step, "state_sha256": state.hex(), "ranks": ranks, "bytes": size, "seed": seed}
    fields["sha256"] = _checkpoint_sum(fields)
    return (json.dumps(fields, sort_keys=True) + "\n").encode()


def decode_checkpoint(data: bytes, path: str) -> tuple:
    """``(step, state bytes, fields)`` of a checkpoint; HcclError naming ``path`` when any check fails."""
    refuse = "checkpoint %s is damaged: %%s - it is not resumed from; move it aside to resume from the one before it" % path
    try:
        fields = json.loads(data.decode("utf-8"))
    except ValueError:
        raise checkpoint_error(refuse % "it is not JSON (cut short?)") from None
    if not isinstance(fields, dict) or fields.get("format") != CHECKPOINT_FORMAT:
        raise checkpoint_error(refuse % ("it is not a '%s' file" % CHECKPOINT_FORMAT))
    written = fields.pop("sha256", None)
    if written != _checkpoint_sum(fields):
        raise checkpoint_error(refuse % "its content does not match the sha256 in it")
    step, state = fields.get("step"), str(fields.get("state_sha256", ""))
    if not isinstance(step, int) or step < 0 or not re.fullmatch(r"[0-9a-f]{64}", state):
        raise checkpoint_error(refuse % "its step or state is not valid")
    return step, bytes.fromhex(state), fields


def newest_checkpoint(directory: str, pattern: re.Pattern) -> tuple | None:
    """``(path, bytes)`` of the newest checkpoint in ``directory`` (by the step in its name), unchecked; None when there is none."""
    found = checkpoint_files(directory, pattern)
    if not found:
        return None
    path = found[-1][1]
    with open(path, "rb") as handle:
        return path, handle.read()


def read_newest_checkpoint(directory: str) -> tuple | None:
    """``(path, step, state, fields)`` of the newest checkpoint in ``directory``, checked; None when there is none."""
    try:
        found = newest_checkpoint(directory, CHECKPOINT_NAME)
    except OSError as exc:
        raise checkpoint_error("cannot read the checkpoints in %s (%s)" % (directory, exc)) from None
    if not found:
        return None
    return (found[0],) + decode_checkpoint(found[1], found[0])


def agree_on_checkpoint(directory: str, rank_id: int, plan: list, transport: Transport) -> tuple | None:
    """Rank 0 reads the newest checkpoint and every rank gets it: ``(path, step, state)``, or None to start afresh.

    Only rank 0 reads ``directory`` (the other ranks' servers may not see it); its answer, one JSON
    message of at most BROADCAST_BYTES, reaches every rank as an all-reduce (XOR) in which every
    other rank gives zeros. A checkpoint rank 0 refuses fails every rank, naming it.
    """
    message = {"kind": "none"}
    if rank_id == 0:
        try:
            found = read_newest_checkpoint(directory)
            if found:
                message = {"kind": "ok", "path": found[0], "step": found[1], "state": found[2].hex()}
        except HcclError as error:
            message = {"kind": "refused", "error": error.cause}
    buf = bytearray(BROADCAST_BYTES)
    if rank_id == 0:
        text = json.dumps(message).encode()
        if len(text) > BROADCAST_BYTES:  # a path or error near PATH_MAX: refuse, saying why, rather than send half
            error = "the checkpoint message (%d bytes: %s...) exceeds %d bytes" % (len(text), text[:200].decode(), BROADCAST_BYTES)
            text = json.dumps({"kind": "refused", "error": error}).encode()
        buf[: len(text)] = text
    allreduce(plan, rank_id, buf, transport.exchange)
    got = json.loads(bytes(buf).rstrip(b"\0").decode("utf-8"))
    if got["kind"] == "refused":
        raise checkpoint_error(got["error"] if rank_id == 0 else "rank 0 refused its checkpoint: %s" % got["error"])
    if got["kind"] == "none":
        return None
    return got["path"], int(got["step"]), bytes.fromhex(got["state"])


def next_state(state: bytes, step: int, result_sha256: bytes) -> bytes:
    """The state after all-reduce ``step``: a sha256 chain over the steps and their results (the same on every rank)."""
    return hashlib.sha256(state + struct.pack("!Q", step) + result_sha256).digest()


# --------------------------------------------------------------------------- main


def write_plog(error: HcclError, env: dict, pid: int, pname: str, when: float) -> str:
    """The plog lines where CANN writes them; ``''`` when printed to stdout instead."""
    lines = [plog_line("ERROR", pid, pname, when, source, text) for source, text in error.log_lines]
    if error.code:
        lines.append(plog_line("ERROR", pid, pname, when, "hccl_standin.py:error", "%s %s" % (error.code, error.reason)))
    if env.get("ASCEND_SLOG_PRINT_TO_STDOUT") == "1":
        print("\n".join(lines), flush=True)
        return ""
    path = plog_path(env, pid, when)
    os.makedirs(os.path.dirname(path), mode=0o750, exist_ok=True)
    tmp = "%s.tmp" % path
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o640)
    with os.fdopen(fd, "w") as handle:
        handle.write("\n".join(lines) + "\n")
    os.replace(tmp, path)
    return path


def process_name() -> str:
    try:
        with open("/proc/self/comm") as handle:
            return handle.read().strip()
    except OSError:
        return os.path.basename(sys.executable)


def hang() -> None:
    """Stop here for good, holding the links open: the peers block in their next receive (``--hang-rank``)."""
    while True:
        time.sleep(3600)


def parse_args(argv: list) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--size-mb", type=float, default=4.0, help="MiB each rank all-reduces (default 4)")
    parser.add_argument("--iters", type=int, default=1, help="all-reduces to run (default 1)")
    parser.add_argument(
        "--chip",
        default="auto",
        choices=sorted(CHIPS) + ["auto"],
        help="910A, 910B, A3, or auto (npu-smi info; a chip it does not name skips the version check)",
    )
    parser.add_argument("--seed", type=int, default=2024, help=argparse.SUPPRESS)
    parser.add_argument("--step-log", action="store_true", help="print one line per all-reduce done, as a training prints its steps")
    # stand-in fault: a rank that stops inside a collective and never comes back (a driver hang, a peer stuck), so that
    # every rank waits on it and prints nothing until HCCL_EXEC_TIMEOUT - what the launch's stall detection is for
    parser.add_argument("--hang-rank", type=int, default=None, help="this rank stops inside the all-reduce of --hang-step")
    parser.add_argument("--hang-step", type=int, default=1, help="the all-reduce (1-based) in which --hang-rank stops")
    parser.add_argument("--checkpoint-dir", default="", help="rank 0 writes checkpoints here; every rank resumes from the newest")
    parser.add_argument("--checkpoint-every", type=int, default=5, help="all-reduces between checkpoints (0: never write one)")
    # stand-in fault: a rank that exits 1 before an all-reduce (a crashed process), once only with --fail-once-file
    parser.add_argument("--fail-rank", type=int, default=None, help="this rank exits 1 before the all-reduce of --fail-step")
    parser.add_argument("--fail-step", type=int, default=1, help="the all-reduce (1-based) before which --fail-rank exits")
    parser.add_argument("--fail-once-file", default="", help="--fail-rank fails only while this file does not exist, creating it")
    args = parser.parse_args(argv)
    if args.checkpoint_every < 0:
        parser.error("--checkpoint-every must be 0 (never) or a number of all-reduces")
    return args


def run(args: argparse.Namespace, env: dict) -> int:
    path, rank_id, device_id = launch_env(env)
    timeout = connect_timeout(env)
    exec_timeout = float(env.get("HCCL_EXEC_TIMEOUT") or EXEC_TIMEOUT_DEFAULT)
    chip = detect_chip() if args.chip == "auto" else args.chip
    started = time.monotonic()
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except OSError as exc:
        raise table_error("cannot read the rank table (%s)" % exc.strerror, path) from None
    ranks = [local_address(r) for r in parse_rank_table(text, path, chip)]
    by_id = {r.rank_id: r for r in ranks}
    if rank_id not in by_id:
        raise table_error("RANK_ID %d is not in the rank table (ranks 0-%d)" % (rank_id, len(ranks) - 1), path)
    me = by_id[rank_id]
    if me.device_id != device_id:
        raise table_error(
            "rank %d is device %d in the table, but this process runs on DEVICE_ID %d" % (rank_id, me.device_id, device_id), path
        )
    device = take_device(device_id, env)
    print(
        "hccl_standin: rank %d/%d device %d %s:%d chip %s"
        % (rank_id, len(ranks), device_id, me.device_ip, me.device_port, chip or "unknown"),
        flush=True,
    )
    count = restart_count(env)
    if count is not None:
        print("hccl_standin: restart count %s" % count, flush=True)
    plan = plan_rings(ranks)
    rings = my_rings(plan, rank_id)
    links = Links(me, by_id, rings, started + timeout, timeout)
    links.establish()
    print(
        "hccl_standin: %d links up in %.2fs (HCCL_CONNECT_TIMEOUT %gs)" % (len(links.wanted), time.monotonic() - started, timeout),
        flush=True,
    )
    size = int(args.size_mb * (1 << 20))
    done, state = 0, bytes(32)
    if args.checkpoint_dir:
        resumed = agree_on_checkpoint(args.checkpoint_dir, rank_id, plan, Transport(links, exec_timeout))
        if resumed:
            checkpoint, done, state = resumed
            print("hccl_standin: resumed from step %d (checkpoint %s)" % (done, checkpoint), flush=True)
        else:
            print("hccl_standin: no checkpoint in %s: starting at step 0" % args.checkpoint_dir, flush=True)
    transport = Transport(links, exec_timeout)
    expected = expected_result(len(ranks), size, args.seed)
    digest = hashlib.sha256(expected).hexdigest()
    began = time.monotonic()
    for iteration in range(done + 1, args.iters + 1):
        if args.hang_rank == rank_id and iteration >= args.hang_step:
            hang()
        if args.fail_rank == rank_id and iteration >= args.fail_step and (not args.fail_once_file or fail_once(args.fail_once_file)):
            raise usage_error("rank %d failing on purpose before all-reduce %d (--fail-rank, a stand-in fault)" % (rank_id, iteration))
        step_began = time.monotonic()
        buf = bytearray(rank_data(rank_id, size, args.seed))
        allreduce(plan, rank_id, buf, transport.exchange)
        if args.step_log:
            print("hccl_standin: step %d all-reduce done in %.3fs" % (iteration, time.monotonic() - step_began), flush=True)
        if bytes(buf) != expected:
            raise HcclError(
                "",
                "",
                [("hccl_standin.py:verify", "all-reduce result differs from the expected bytes")],
                "rank %d: the all-reduce result is wrong" % rank_id,
            )
        state = next_state(state, iteration, bytes.fromhex(digest))
        if rank_id == 0 and args.checkpoint_dir and args.checkpoint_every and iteration % args.checkpoint_every == 0:
            path = os.path.join(args.checkpoint_dir, "step_%08d.json" % iteration)
            try:
                write_atomically(path, encode_checkpoint(iteration, state, len(ranks), size, args.seed))
                prune_checkpoints(args.checkpoint_dir, CHECKPOINT_NAME)
            except OSError as exc:
                raise checkpoint_error("cannot write checkpoint %s (%s): make --checkpoint-dir writable" % (path, exc)) from None
            print("hccl_standin: checkpoint step %d written to %s" % (iteration, path), flush=True)
    steps_run = max(0, args.iters - done)
    elapsed = time.monotonic() - began
    report = []
    for ring in rings:
        link = links.link(ring, True)
        sent, seconds = transport.sent.get(ring.number, [0, 0.0])
        mbps = sent / seconds / 1e6 if seconds > 0 else 0.0
        report.append(
            {
                "ring": ring.name,
                "from_rank": rank_id,
                "from_ip": me.device_ip,
                "to_rank": link.remote.rank_id,
                "to_ip": link.remote.device_ip,
                "to_port": link.remote.device_port,
                "bytes": sent,
                "seconds": round(seconds, 6),
                "mb_per_s": round(mbps, 2),
            }
        )
        print(
            "hccl_standin: link rank %d %s -> rank %d %s:%d (%s): %.2f MiB in %.3fs, %.1f MB/s"
            % (
                rank_id,
                me.device_ip,
                link.remote.rank_id,
                link.remote.device_ip,
                link.remote.device_port,
                ring.name,
                sent / (1 << 20),
                seconds,
                mbps,
            ),
            flush=True,
        )
    algbw = size * steps_run / elapsed / 1e6 if elapsed > 0 else 0.0
    print(
        "hccl_standin: all-reduce (xor) of %.2f MiB x %d over %d ranks in %.3fs, algbw %.1f MB/s; result verified, sha256 %s"
        % (size / (1 << 20), steps_run, len(ranks), elapsed, algbw, digest),
        flush=True,
    )
    print("hccl_standin: final state sha256 %s after step %d" % (state.hex(), max(done, args.iters)), flush=True)
    summary = {"rank": rank_id, "device": device_id, "ranks": len(ranks), "bytes": size, "iters": steps_run}
    summary.update({"seconds": round(elapsed, 6), "algbw_mb_per_s": round(algbw, 2), "sha256": digest, "links": report})
    summary.update({"resumed_from": done, "step": max(done, args.iters), "state_sha256": state.hex()})
    print("%s %s" % (RESULT_PREFIX, json.dumps(summary, sort_keys=True)), flush=True)
    del device
    return 0


def main(argv: list | None = None, env: dict | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    env = dict(os.environ) if env is None else env
    try:
        return run(args, env)
    except HcclError as error:
        when = time.time()
        pid = os.getpid()
        where = write_plog(error, env, pid, process_name(), when)
        lines = error_block(error, pid, when)
        if where:
            lines.insert(len(lines) - 1, "hccl_standin: plog %s" % where)
        sys.stdout.flush()
        print("\n".join(lines), file=sys.stderr, flush=True)
        return 1


if __name__ == "__main__":
    sys.exit(main())
