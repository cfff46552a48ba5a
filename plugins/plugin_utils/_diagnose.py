# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Why a job failed: the first Ascend error of each rank, what its code means, what the live checks show.

Pure functions, used by the ``ascend.cluster.diagnosis`` filter (``playbooks/diagnose.yml``):

- :func:`first_error` reads a rank's log (the training's stdout/stderr) and its plog lines and returns
  the first Ascend error: code, CANN time, message, the peers it names (``LINK_ERROR_INFO``, the HCCL
  log lines, the HCCL stand-in's cause line);
- :data:`CODES` is what each known code means and its likely causes, most likely first (reference
  section 7, ``../shared/ascend-reference.md``);
- :func:`diagnose` combines every rank's finding with the live checks of the servers (link,
  net_health and TLS of the devices involved, firewall, clock offsets, leftover processes, ports in
  use) into the rows of one table and one line: ``EI0006 on ranks 3, 11 from 12:03:04: h2 eth3 link
  DOWN - check the optics/cable``; the first failing rank first, by :func:`first_order` (the rank the
  job's group named, as the ``FAILED:`` line does, else the clock-corrected order).

Formats recognised (reference section 7, and the real outputs of ``tests/corpus/logs/``, docs/real-outputs.md): the
stderr block ``EI0006: [PID: n] 2025-04-08-18:07:20.444.436 text`` (older CANN without ``[PID: n]``), the newer
``[PID: n] <time> Bind_Failed(EJ0003): text``, MindSpore's ``... Ascend Error Message:EJ0001: text`` on a log line of
its own, summary names ``Communication_Error_Get_Socket(EI0006)``, plog lines ``[ERROR] HCCL(pid,pname):2025-07-23-
03:49:57.177.194 [file.cc:778]text`` (MindSpore's ``[CRITICAL] DEVICE(pid,tid,pname):...`` too), torch_npu's
``HcclAllreduce, error code is 6`` and ``ERR01100 OPS call acl api failed``, and the HCCL texts the reference or the
HCCL documentation quotes without a code (``wait socket establish timeout``, ``LINK_ERROR_INFO``, ``listen on
ip[...] and specific port[16666] fail``, ``device_ip is invalid in ranktable``, ``Maybe the last training process is
running``): their code is then inferred, and the diagnosis says so. Every line may carry a launcher's prefix
(torchrun's ``[rank1]: ``, a serving framework's ``(Worker_TP11 pid=15618) ERROR 10-11 11:32:59 [file.py:3556] ``):
it is removed before reading (:func:`strip_launcher`).

The peers: the plog's ``LINK_ERROR_INFO`` table (rows ``| dest_ip(user_rank) | dest_port | src_ip(user_rank) | ...``,
destination first: the peer's device IP, rank and port, and this device's IP), ``Transport init error ...
remoteUserrank[N]-remote_ip_addr[host]`` (the peer's rank and server), and the HCCL stand-in's table and cause line.
``wait socket establish timeout, role[r] rank[N]`` names the waiting rank itself, never a peer.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ansible_collections.ascend.cluster.plugins.module_utils._job_control import controller_time
from ansible_collections.ascend.cluster.plugins.module_utils._torch_error import describe as torch_error_line
from ansible_collections.ascend.cluster.plugins.plugin_utils._text_table import text_table
from ansible_collections.ascend.cluster.plugins.plugin_utils._watch import rank_ranges

TIME = r"\d{4}-\d{2}-\d{2}-\d{2}:\d{2}:\d{2}\.\d{3}\.\d{3}"
# "EI0006: [PID: 1292363] 2025-04-08-18:07:20.444.436 Getting socket times out. ..." (older CANN: no [PID: n])
_BLOCK = re.compile(r"^\s*(E[A-Z]\d{4}):\s*(?:\[PID:\s*(\d+)\]\s*)?(" + TIME + r")?\s*(.*)$")
# "[PID: 60571] 2025-12-04-14:46:07.669.968 Bind_Failed(EJ0003): Failed to bind the IP port. ..." (newer CANN)
_PID_BLOCK = re.compile(r"^\s*\[PID:\s*(\d+)\]\s*(" + TIME + r")\s+(?:([A-Z][A-Za-z_]*)\()?(E[A-Z]\d{4})\)?:\s*(.*)$")
# MindSpore: "...initialization failed.Ascend Error Message:EJ0001: Failed ..." / "error message: EJ0001: ..."
_EMBEDDED = re.compile(r"(?:Ascend Error Message|error message):\s*(E[A-Z]\d{4}):\s*(.*)$", re.IGNORECASE)
# "Communication_Error_Get_Socket(EI0006)"
_SUMMARY = re.compile(r"\b([A-Z][A-Za-z_]+)\((E[A-Z]\d{4})\)")
# "[ERROR] HCCL(2717288,python3):2025-07-23-03:49:57.177.194 [hccl_socket_manager.cc:778] [2734049][Wait]..."; MindSpore's
# "[CRITICAL] DEVICE(17381,ffff890145d0,python):2022-12-01-03:02:29.002.576 [.../ascend_collective_comm_lib.cc:112] ..."
_PLOG = re.compile(
    r"^\[(ERROR|WARNING|INFO|DEBUG|EVENT|CRITICAL|EXCEPTION|TRACE)\]\s*([A-Za-z_]+)\((\d+),([^)]*)\):(" + TIME + r")\s*\[([^\]]*)\]\s?(.*)$"
)
# Launchers' per-line prefixes: torchrun's "[rank1]: ", a serving framework's "(Worker_TP11 pid=15618) ERROR 10-11 11:32:59
# [model_runner_v1.py:3556] " (vllm, vllm-ascend; "(EngineCore_DP0 pid=1096) (RayWorkerWrapper pid=545, ip=...) " nests).
_LAUNCHER = re.compile(
    r"^(?:\[rank\d+\]:\s?|\([^()]*\bpid=\d+[^()]*\)\s?(?:(?:ERROR|WARNING|INFO|DEBUG|CRITICAL)\s+\d{2}-\d{2}\s+\d{2}:\d{2}:\d{2}\s+\[[^\]]*\]\s?)?)"
)
_TORCH_HCCL = re.compile(r"\b(Hccl[A-Za-z]+), error code is (\d+)")
_TORCH_ERR = re.compile(r"\b(ERR\d{5})\b\s*(.*)")
_CODE_IN_TEXT = re.compile(r"\b(E[A-Z]\d{4})\b")
_IP = r"\d{1,3}(?:\.\d{1,3}){3}"
_IP_RE = re.compile(r"\b(" + _IP + r")\b")
# "listen on ip[192.168.20.160] and specific port[16666] fail"; the host NIC's form names the interface: "ip[192.168.1.100%enp53s0f2]"
_LISTEN = re.compile(r"listen on ip\[(" + _IP + r")(?:%[^\]]*)?\] and specific port\[(\d+)\] fail")
# A LINK_ERROR_INFO row's "192.168.100.212(10)": a device IP and its user rank
_IP_RANK = re.compile(r"(" + _IP + r")\((\d+)\)")
# "createLink para:rank[1]-localUserrank[1]-localIpAddr[11.254.19.30], dst_rank[2]-remoteUserrank[2]-remote_ip_addr[11.254.19.30]"
# (newer CANN: "remoteRank[0]-remoteUserrank[0]-remoteIpAddr[192.168.200.100/0]", [server/device id]; some print "creakLink")
_TRANSPORT = re.compile(
    r"crea(?:te|k)Link para:\s*rank\[\d+\]-localUserrank\[(\d+)\]-localIpAddr\[([^\]]*)\],\s*"
    r"(?:dst_rank|remoteRank)\[\d+\]-remoteUserrank\[(\d+)\]-(?:remote_ip_addr|remoteIpAddr)\[([^\]/]*)"
)
_STANDIN_PEER = re.compile(r"\brank (\d+) (" + _IP + r"):(\d+)")
# EADDRNOTAVAIL's text (strerror): the address HCCL binds is not this device's (the stand-in and the OS print it so)
ADDRESS_TEXT = "Cannot assign requested address"
_STANDIN_SELF = re.compile(r"hccl_standin: EI\d{4} [^:]*: rank (\d+) \(device (\d+), (" + _IP + r")\)")

# HCCL texts the reference quotes, and the code they belong to when a log shows the text without it.
TEXT_CODES = (
    ("wait socket establish timeout", "EI0006"),
    ("Getting socket times out", "EI0006"),
    # HCCL reports EI0006 as it prints the table (HCCL user guide, 建链超时（EI0006）: hicann/hccl
    # docs/zh/user_guide/fault_diagnosis/param_link_stage.md); older CANN prints the table alone (comm_base.cc).
    ("LINK_ERROR_INFO", "EI0006"),
    ("specific port[", "EI0019"),
    ("device_ip is invalid in ranktable", "EI0014"),
    # HCCP's device-IP check (HCCL user guide, rank table文件中device_ip字段校验失败（EI0014）: rank_table_load_fail.md)
    ("in the ranktable is inconsistent with the IP address", "EI0014"),
    ("Config_Error_Ranktable", "EI0014"),
    ("Maybe the last training process is running", "EJ0001"),
)

# Reference section 7: what each code means in practice, and its likely causes, most likely first.
# ``checks`` are the live checks that can confirm a cause (see :func:`evidence`).
CODES: dict = {
    "EI0006": {
        "meaning": "socket timeout: a link between ranks did not come up (or broke) within HCCL_CONNECT_TIMEOUT",
        "causes": [
            "a parameter-plane link down (optics, cable, switch port)",
            "a firewall between the ranks",
            "ranks started more than HCCL_CONNECT_TIMEOUT apart (clocks, a slow or late rank)",
            "a wrong HCCL_IF_IP, or device IPs not in one subnet",
            "the TLS switch differs between devices",
            "a dead peer (its own log says why)",
        ],
        "checks": ["link", "net_health", "tls", "firewall", "clock", "leftover"],
    },
    "EJ0001": {
        "meaning": "the device is held by another process",
        "causes": ["the last training process is still running: stop it (ascend.cluster.stop) and wait ~10 s"],
        "checks": ["leftover"],
    },
    "EI0014": {
        "meaning": "the rank table is refused",
        "causes": [
            "a device IP of -.-.-.- or empty in the table: run ascend.cluster.prepare (device IPs)",
            "a rank table of the wrong version or format for the chip: let the rank_table role pick it",
        ],
        "checks": [],
    },
    "EI0019": {
        "meaning": "a port HCCL listens on is in use",
        "causes": [
            "another process listens on HCCL's device port (16666) or its host ports (from the job's HCCL_IF_BASE_PORT, "
            "60000 when unset; HCCL_HOST_SOCKET_PORT_RANGE)",
            "a leftover training holds the port",
        ],
        "checks": ["port", "leftover"],
    },
}
CODES["EJ0003"] = dict(CODES["EI0019"])
# An EI0019 (or EJ0003) whose own text says ADDRESS_TEXT: HCCL could not bind the table's device IP at all.
ADDRESS: dict = {
    "meaning": "HCCL cannot listen on the rank table's device IP (%s): the table names an IP this device does not have" % ADDRESS_TEXT,
    "causes": [
        "a rank table built from a stale /etc/hccn.conf or another cluster's table: rebuild it from the devices "
        "(the rank_table playbook; train.yml rebuilds it)",
        "the device's IP was changed or lost after the table was built: ascend.cluster.prepare (device IPs), then rebuild the table",
    ],
    "checks": ["device_ip"],
}
UNKNOWN_CAUSE = "not in the reference's list of codes: read the rank's log and plog around this line"
TORCH_MEANING = "an HCCL call from torch_npu failed; the HCCL code above it in the log says why"

# Evidence kinds in the order they are trusted (a link down explains more than a clock offset).
KINDS = ("device_ip", "link", "net_health", "tls", "port", "leftover", "firewall", "clock")


def cann_clock(cann_time: str | None) -> str | None:
    """``2025-04-08-18:07:20.444.436`` -> ``18:07:20``."""
    return cann_time[11:19] if cann_time else None


def strip_launcher(line: str) -> str:
    """``line`` without the prefixes a launcher writes before each line of a rank's output (see :data:`_LAUNCHER`)."""
    found = _LAUNCHER.match(line)
    while found and found.end():
        line = line[found.end() :]
        found = _LAUNCHER.match(line)
    return line


def parse_plog(lines: list) -> list:
    """Plog lines as dicts (level, module, pid, time, source, text); other lines are skipped."""
    out = []
    for line in lines:
        found = _PLOG.match(strip_launcher(str(line)).strip())
        if found:
            level, module, pid, _pname, when, source, text = found.groups()
            out.append({"level": level, "module": module, "pid": int(pid), "time": when, "source": source, "text": text.strip()})
    return out


def plog_link_errors(entries: list) -> list:
    """The links of the plog's ``LINK_ERROR_INFO`` tables: ``{"local_ip", "local_rank", "remote_ip", "remote_rank",
    "remote_port"}``.

    Each row is a plog line of its own; the header names the columns, the destination (the peer) first:
    ``| dest_ip(user_rank) | dest_port | src_ip(user_rank) | src_port | MyRole | Status | TlsStatus |`` (CANN 8.x),
    ``| dest_ip(rank_id) | src_ip(rank_id) | Role | Status |`` (older CANN). A cell reads ``192.168.100.212(10)``.
    ``entries`` are :func:`parse_plog`'s.
    """
    links: list = []
    header: list = []
    inside = False
    for entry in entries:
        text = entry["text"]
        if "LINK_ERROR_INFO" in text:
            inside, header = True, []
            continue
        if not inside:
            continue
        if "|" not in text:
            inside = False
            continue
        cells = [cell.strip() for cell in text.split("|")[1:]]
        if any(cell.startswith("dest_ip") for cell in cells):
            header = cells
            continue
        if not header or len(cells) < len(header):
            continue
        row = dict(zip(header, cells))
        dest = next((_IP_RANK.search(v) for k, v in row.items() if k.startswith("dest_ip")), None)
        src = next((_IP_RANK.search(v) for k, v in row.items() if k.startswith("src_ip")), None)
        if dest is None:
            continue
        links.append(
            {
                "local_ip": src.group(1) if src else None,
                "local_rank": int(src.group(2)) if src else None,
                "remote_ip": dest.group(1),
                "remote_rank": int(dest.group(2)),
                "remote_port": _int(row.get("dest_port")),
            }
        )
    return links


def link_error_info(lines: list) -> list:
    """The links of a ``LINK_ERROR_INFO`` table: ``{"local_ip", "remote_ip", "remote_rank", "remote_port"}``.

    The reference names the columns (local/remote rank, IPs, ports) but not their layout: a header row
    names them when present (the stand-in's ``local_rank local_ip local_port remote_rank remote_ip
    remote_port``); without one, the first IP of a row is the local one and the second the remote one.
    """
    links: list = []
    header: list = []
    inside = False
    for line in lines:
        if "LINK_ERROR_INFO" in line:
            inside = True
            continue
        if not inside:
            continue
        if not line.strip() or not line[:1].isspace():
            if links or header:
                inside = False
            continue
        cells = line.split()
        if "remote_ip" in cells:
            header = cells
            continue
        ips = _IP_RE.findall(line)
        if len(ips) < 2:
            continue
        if header and len(cells) == len(header):
            row = dict(zip(header, cells))
            links.append(
                {
                    "local_ip": row.get("local_ip"),
                    "remote_ip": row.get("remote_ip"),
                    "remote_rank": _int(row.get("remote_rank")),
                    "remote_port": _int(row.get("remote_port")),
                }
            )
        else:
            links.append({"local_ip": ips[0], "remote_ip": ips[1], "remote_rank": None, "remote_port": None})
    return links


def _int(text: Any) -> int | None:
    try:
        return int(text)
    except (TypeError, ValueError):
        return None


def _peers(lines: list, plog: list) -> tuple:
    """(peers, local_ip): the remote ends an error names, ``{"rank", "ip", "port", "host"}``, first mention first.

    ``ip`` and ``port`` are the peer device's (``LINK_ERROR_INFO``), ``host`` its server's (``Transport init error``).
    """
    peers: list = []
    local_ip = None

    def add(rank: int | None, ip: str | None, port: int | None, host: str | None = None) -> None:
        for peer in peers:
            if (rank is not None and peer["rank"] == rank) or (rank is None and ip and peer["ip"] == ip):
                for key, value in (("rank", rank), ("ip", ip), ("port", port), ("host", host)):
                    peer[key] = peer[key] if peer[key] is not None else value
                return
        peers.append({"rank": rank, "ip": ip, "port": port, "host": host})

    for link in plog_link_errors(plog):
        local_ip = local_ip or link["local_ip"]
        add(link["remote_rank"], link["remote_ip"], link["remote_port"])
    for link in link_error_info(lines):
        local_ip = local_ip or link["local_ip"]
        add(link["remote_rank"], link["remote_ip"], link["remote_port"])
    for text in lines + [entry["text"] for entry in plog]:
        for found in _TRANSPORT.finditer(text):
            add(int(found.group(3)), None, None, found.group(4) or None)
    for line in lines:
        own = _STANDIN_SELF.search(line)
        if own:
            local_ip = local_ip or own.group(3)
            rest = line[own.end() :]
            for rank, ip, port in _STANDIN_PEER.findall(rest):
                add(int(rank), ip, int(port))
    return peers, local_ip


def _text_code(text: str) -> str | None:
    return next((code for needle, code in TEXT_CODES if needle in text), None)


def _code_line(line: str) -> dict | None:
    """The Ascend error a log line states with its code (``code``, ``time``, ``summary``, ``message``), or None."""
    block = _BLOCK.match(line)
    if block:
        code, _pid, when, text = block.groups()
        return {"code": code, "time": when, "summary": None, "message": text.strip()}
    pid_block = _PID_BLOCK.match(line)
    if pid_block:
        _pid, when, name, code, text = pid_block.groups()
        return {"code": code, "time": when, "summary": name, "message": text.strip()}
    embedded = _EMBEDDED.search(line)
    if embedded:
        plog = _PLOG.match(line.strip())
        return {"code": embedded.group(1), "time": plog.group(5) if plog else None, "summary": None, "message": embedded.group(2).strip()}
    return None


def first_error(log_lines: list, plog_lines: list | None = None) -> dict | None:
    """The first Ascend error of one rank from its log lines and its plog lines, or None.

    Returns ``{"code", "time", "clock", "message", "summary", "peers", "local_ip", "listen", "variant", "inferred",
    "source"}``: ``code`` an Ascend code (``EI0006``), ``HCCL`` (torch_npu's ``error code is N`` only)
    or ``ERR01100`` and the like; ``inferred`` True when the code comes from an HCCL text, not the code
    itself; ``time`` the CANN time of the error (of the block, else of the first ERROR plog line); ``variant``
    ``address`` for an EI0019 / EJ0003 whose text says :data:`ADDRESS_TEXT` (a device IP that is not the device's,
    not a port in use), else None. Launchers' line prefixes are removed first; plog lines printed into the log
    (``ASCEND_SLOG_PRINT_TO_STDOUT=1``) are read as plog lines too, after the plog's own.
    """
    log_lines = [strip_launcher(str(line)) for line in (log_lines or [])]
    plog = parse_plog([str(line) for line in (plog_lines or [])]) + parse_plog(log_lines)
    errors = [e for e in plog if e["level"] in ("ERROR", "CRITICAL", "EXCEPTION")]
    found: dict | None = None
    for line in log_lines:
        stated = _code_line(line)
        if stated:
            found = dict(stated, inferred=False, source="log")
            break
    if found is None:
        for line in log_lines:
            summary = _SUMMARY.search(line)
            if summary:
                found = {"code": summary.group(2), "time": None, "summary": summary.group(1), "message": line.strip(), "inferred": False}
                found["source"] = "log"
                break
    if found is None:
        for entry in errors:
            code = _CODE_IN_TEXT.search(entry["text"])
            if code:
                found = {"code": code.group(1), "time": entry["time"], "message": entry["text"], "inferred": False, "source": "plog"}
                break
    if found is None:
        for source, texts in (("plog", [(e["text"], e["time"]) for e in errors]), ("log", [(line, None) for line in log_lines])):
            hit = next(((text, when) for text, when in texts if _text_code(text)), None)
            if hit:
                found = {"code": _text_code(hit[0]), "time": hit[1], "message": hit[0].strip(), "inferred": True, "source": source}
                break
    if found is None:
        for line in log_lines:
            torch = _TORCH_HCCL.search(line)
            if torch:
                found = {"code": "HCCL", "time": None, "message": line.strip(), "inferred": True, "source": "log"}
                break
            err = _TORCH_ERR.search(line)
            if err:
                found = {"code": err.group(1), "time": None, "message": line.strip(), "inferred": True, "source": "log"}
                break
    if found is None:
        return None
    if found["time"] is None and errors:
        found["time"] = errors[0]["time"]
    if not found.get("summary"):
        names = [m for m in (_SUMMARY.search(line) for line in log_lines) if m and m.group(2) == found["code"]]
        found["summary"] = names[0].group(1) if names else None
    every_text = log_lines + [e["text"] for e in plog]
    listen = next((m for m in (_LISTEN.search(t) for t in every_text) if m), None)
    peers, local_ip = _peers(log_lines, plog)
    address = found["code"] in ("EI0019", "EJ0003") and any(ADDRESS_TEXT in t for t in every_text)
    found.update(
        variant="address" if address else None,
        clock=cann_clock(found["time"]),
        peers=peers,
        local_ip=local_ip,
        listen={"ip": listen.group(1), "port": int(listen.group(2))} if listen else None,
    )
    return found


def meaning(code: str | None, variant: str | None = None) -> dict:
    """``{"meaning", "causes", "checks", "known"}`` of a code (and its ``variant``); unknown codes say the cause is inferred."""
    if variant == "address" and code in CODES:
        return dict(ADDRESS, known=True)
    if code in CODES:
        return dict(CODES[code], known=True)
    if code == "HCCL":
        return {"meaning": TORCH_MEANING, "causes": [UNKNOWN_CAUSE], "checks": [], "known": False}
    return {
        "meaning": "%s: %s" % (code, UNKNOWN_CAUSE) if code else "no Ascend error code in the log or plog",
        "causes": [],
        "checks": [],
        "known": False,
    }


def device_index(live: dict) -> dict:
    """``device_ip -> (server, device_id)`` from the live devices."""
    index = {}
    for server, devices in (live.get("devices") or {}).items():
        for device_id, device in devices.items():
            if device.get("device_ip"):
                index[device["device_ip"]] = (server, int(device_id))
    return index


def involved(findings: list, live: dict) -> list:
    """The ``(server, device_id)`` pairs the failing ranks and the peers they name run on, in order of mention."""
    index = device_index(live)
    pairs: list = []
    by_rank = {f["rank_id"]: (f["server"], f["device_id"]) for f in findings}
    for finding in findings:
        for pair in [(finding["server"], finding["device_id"])] + [
            index.get(peer["ip"]) or by_rank.get(peer["rank"]) for peer in (finding.get("error") or {}).get("peers", [])
        ]:
            if pair and pair not in pairs:
                pairs.append(pair)
    return pairs


def evidence(pairs: list, live: dict, connect_timeout: float = 120.0) -> list:
    """What the live checks show about the devices and servers involved: ``{"kind", "server", "text"}``, most telling first."""
    found: list = []
    devices = live.get("devices") or {}
    servers: list = []
    for server, device_id in pairs:
        servers += [server] if server not in servers else []
        device = (devices.get(server) or {}).get(device_id) or (devices.get(server) or {}).get(str(device_id)) or {}
        if device.get("link") == "DOWN":
            found.append({"kind": "link", "server": server, "text": "%s eth%d link DOWN - check the optics/cable" % (server, device_id)})
        health = device.get("net_health")
        # Init without a netdetect address: nothing is probed, so it says nothing about the link
        if health and health != "Success" and not (health == "Init" and not device.get("netdetect")):
            found.append(
                {
                    "kind": "net_health",
                    "server": server,
                    "text": "%s device %d net_health %s - check its path to the netdetect address or gateway" % (server, device_id, health),
                }
            )
    tls = {(s, d): ((devices.get(s) or {}).get(d) or {}).get("tls_switch") for s, d in pairs}
    known = {k: v for k, v in tls.items() if v is not None}
    if len(set(known.values())) > 1:
        found.append(
            {
                "kind": "tls",
                "server": "",
                "text": "TLS switch differs: %s - set the same TLS switch on every device"
                % ", ".join("%s device %d %s" % (s, d, "on" if v else "off") for (s, d), v in known.items()),
            }
        )
    for server in servers:
        for text in (live.get("ports") or {}).get(server) or []:
            found.append({"kind": "port", "server": server, "text": "%s: %s - stop it, or move the job's ports" % (server, text)})
        for text in (live.get("leftovers") or {}).get(server) or []:
            found.append({"kind": "leftover", "server": server, "text": "%s: %s - ascend.cluster.stop, or kill it" % (server, text)})
        for text in (live.get("packet_filter") or {}).get(server) or []:
            found.append(
                {
                    "kind": "firewall",
                    "server": server,
                    "text": "%s packet filter: %s - delete the rule, or accept the job's ports before it" % (server, text),
                }
            )
        firewall = (live.get("firewall") or {}).get(server)
        if firewall and _firewall_active(firewall.split(";")[0]):
            found.append(
                {
                    "kind": "firewall",
                    "server": server,
                    "text": "%s firewall: %s - open the training ports (roles/firewall) or disable it" % (server, firewall),
                }
            )
    # Every server's clock counts: a late start anywhere makes the ranks time out waiting for it.
    for server, offset in sorted((live.get("clock") or {}).items()):
        if isinstance(offset, (int, float)) and abs(offset) > min(1.0, connect_timeout / 4):
            found.append(
                {
                    "kind": "clock",
                    "server": server,
                    "text": "%s clock %+.1f s off the controller - fix NTP (chrony); ranks more than HCCL_CONNECT_TIMEOUT=%gs apart time out"
                    % (server, offset, connect_timeout),
                }
            )
    return sorted(found, key=lambda e: KINDS.index(e["kind"]))


def address_evidence(findings: list, live: dict) -> list:
    """For each rank whose EI0019 says :data:`ADDRESS_TEXT`: the device IP the live read shows against the one the
    rank could not listen on (its table's), ``{"kind": "device_ip", "server", "text"}``."""
    found: list = []
    devices = live.get("devices") or {}
    for finding in findings:
        error = finding.get("error") or {}
        if error.get("variant") != "address":
            continue
        server, device_id = finding["server"], finding["device_id"]
        wanted = (error.get("listen") or {}).get("ip")
        device = (devices.get(server) or {}).get(device_id) or (devices.get(server) or {}).get(str(device_id)) or {}
        has = device.get("device_ip")
        if not has:
            text = "%s device %d: its IP could not be read live (hccn_tool -i %d -ip -g) - compare it with the table's %s" % (
                server,
                device_id,
                device_id,
                wanted or "device_ip",
            )
        elif wanted and wanted != has:
            text = (
                "the rank table gives rank %d (%s device %d) device IP %s, but the device has %s (hccn_tool -i %d -ip -g) - "
                "rebuild the table from the devices (the rank_table playbook; train.yml rebuilds it)"
                % (finding["rank_id"], server, device_id, wanted, has, device_id)
            )
        else:
            text = (
                "%s device %d has %s, the table's IP, yet HCCL cannot listen on it - check the device's network "
                "(hccn_tool -i %d -ip -g, -link -g; ascend.cluster.prepare)" % (server, device_id, has, device_id)
            )
        entry = {"kind": "device_ip", "server": server, "text": text}
        if entry not in found:
            found.append(entry)
    return found


def _firewall_active(state: str) -> bool:
    words = state.lower().split()
    return ("active" in words or "running" in words) and "inactive" not in words and "not" not in words


CAUSE_KEYS = ("rank_id", "server", "host", "device_id", "rc", "error", "stopped_by", "lost")  # of the group's cause, kept
GROUP = "the job's group"  # how the first failing rank was decided: the group's cause named it
CLOCK = "the clock-corrected end times"  # or: by when each rank ended, in the controller's clock


def first_order(findings: list, first_rank: int | None = None) -> list:
    """``findings`` in the order the job's first failure comes first - the one rule ``diagnose`` follows.

    The rank the job's group named first (``first_rank``: its ``cause``, the first abort line that reached its
    coordinator, which the watch's ``FAILED:`` line names too) leads; then failed ranks before stopped ones, each by when
    it ended in the controller's clock (its ``ended`` less its server's ``clock_offset``: ranks on two servers 29 ms
    apart are told apart whatever their clocks say), then its error's CANN time (its server's clock, uncorrected), then
    its rank id.
    """

    def key(finding: dict) -> tuple:
        ended = controller_time(finding, "ended")
        when = (finding.get("error") or {}).get("time") or "~"
        return (
            first_rank is None or finding["rank_id"] != first_rank,
            finding.get("state") != "failed",
            ended or float("inf"),
            when,
            finding["rank_id"],
        )

    return sorted(findings, key=key)


def group_first_rank(cause: Any) -> int | None:
    """The rank the job's group named as its first failure (``group.json``'s ``cause``), None when it names none (the
    job was stopped from outside, a server was lost, or there is no group view)."""
    if not isinstance(cause, dict) or "stopped_by" in cause or cause.get("lost"):
        return None
    rank = cause.get("rank_id")
    return rank if isinstance(rank, int) and not isinstance(rank, bool) and rank >= 0 else None


def diagnose(findings: list, live: dict | None = None, connect_timeout: float = 120.0, first_rank: int | None = None) -> dict:
    """One diagnosis from every rank's finding and the live checks.

    ``findings``: ``{"server", "rank_id", "device_id", "state", "rc", "ended", "clock_offset", "error": first_error(...)
    or None, "last_line"}`` per failed or stopped rank. ``live``: ``{"devices": {server: {device_id: hccn_facts
    device}}, "firewall": {server: state}, "packet_filter": {server: [what drops or rejects the job's ports]}, "clock":
    {server: offset}, "leftovers": {server: [text]}, "ports": {server: [text]}}``. ``first_rank``: the rank the job's group named as its first failure
    (:func:`group_first_rank`), if any.

    Returns ``{"line", "rows", "first", "evidence", "seen", "involved"}`` (``seen``: the live evidence as
    ``{"kind", "server", "text"}``, what the restart policy reads, ``_restart.at_fault``): one row per code (ranks, from, first
    rank, meaning, likely causes ranked: what the live checks saw first, then the code's usual causes),
    the first failing rank's row first (:func:`first_order`); ``first``: that rank (``rank_id``, ``server``,
    ``device_id``) and ``by``, what decided it (:data:`GROUP` or :data:`CLOCK`), or None.
    """
    live = live or {}
    ordered_all = first_order([f for f in findings if f.get("error") or f.get("state") == "failed"], first_rank)
    ordered = [f for f in ordered_all if f.get("error")]
    groups: dict = {}
    for finding in ordered:
        groups.setdefault((finding["error"]["code"], finding["error"].get("variant")), []).append(finding)
    silent = [f for f in ordered_all if not f.get("error")]
    pairs = involved(ordered + silent, live)
    seen = sorted(address_evidence(ordered, live) + evidence(pairs, live, connect_timeout), key=lambda e: KINDS.index(e["kind"]))
    rows = []
    for (code, variant), members in groups.items():
        info = meaning(code, variant)
        inferred = any(m["error"]["inferred"] for m in members) or not info["known"]
        here = [e for e in seen if e["kind"] in info["checks"]]
        causes = [e["text"] for e in here] + list(info["causes"])
        first = members[0]
        # the first rank's own time (its server's clock), else the earliest its members have
        times = (
            [first["error"]["time"]]
            if first["error"].get("time")
            else sorted(m["error"]["time"] for m in members if m["error"].get("time"))
        )
        rows.append(
            {
                "code": code,
                "variant": variant,
                "ranks": rank_ranges([m["rank_id"] for m in members]),
                "rank_ids": sorted(m["rank_id"] for m in members),
                "from": cann_clock(times[0]) if times else None,
                "time": times[0] if times else None,
                "first_rank": "rank %d (%s device %d)" % (first["rank_id"], first["server"], first["device_id"]),
                "meaning": info["meaning"],
                "message": first["error"]["message"],
                "peers": first["error"]["peers"],
                "likely_causes": causes,
                "seen_live": [e["text"] for e in here],
                "inferred": inferred,
            }
        )
    if silent:
        first = silent[0]
        how = first.get("cause") or "exit code %s" % first.get("rc")
        last = first.get("last_line") or ""
        # the exception torch's @record wrote says more than the console's last line
        raised = torch_error_line(first.get("torch_error"))
        # a last line that repeats the cause (a stalled rank's runner notes it in the log) adds nothing
        cause = "%s; its log ends: %s" % (how, last) if last and how not in last else how
        if raised:
            cause, last = "%s: %s" % (how, raised), first["torch_error"]["exception"]
        # the row of the job's first failure first: this one, when that rank logged no code
        rows.insert(
            0 if ordered_all[0] is first else len(rows),
            {
                "code": None,
                "ranks": rank_ranges([f["rank_id"] for f in silent]),
                "rank_ids": sorted(f["rank_id"] for f in silent),
                "from": None,
                "time": None,
                "first_rank": "rank %d (%s device %d)" % (first["rank_id"], first["server"], first["device_id"]),
                "meaning": "no Ascend error code in the log or plog",
                "message": last,
                "peers": [],
                "likely_causes": [cause] + [e["text"] for e in seen],
                "seen_live": [e["text"] for e in seen],
                "inferred": True,
            },
        )
    lead = ordered_all[0] if ordered_all else None
    return {
        "line": summary_line(rows),
        "rows": rows,
        "first": None
        if lead is None
        else {
            "rank_id": lead["rank_id"],
            "server": lead["server"],
            "device_id": lead["device_id"],
            "by": GROUP if lead["rank_id"] == first_rank else CLOCK,
        },
        "evidence": [e["text"] for e in seen],
        "seen": seen,
        "involved": [list(p) for p in pairs],
    }


def summary_line(rows: list) -> str:
    """``EI0006 on ranks 8-15 from 12:03:04: h2 eth3 link DOWN - check the optics/cable`` (the first row)."""
    if not rows:
        return "no failed rank and no Ascend error code found: nothing to diagnose"
    row = rows[0]
    ranks = ("rank " if len(row["rank_ids"]) == 1 else "ranks ") + row["ranks"]
    head = "%s on %s" % (row["code"] or "no Ascend error code", ranks)
    if row["from"]:
        head += " from %s" % row["from"]
    cause = row["likely_causes"][0] if row["likely_causes"] else row["meaning"]
    if not row["seen_live"] and row["code"]:
        cause = "%s; likely %s" % (row["meaning"], cause) if row["likely_causes"] else cause
    if row["inferred"] and row["code"]:
        cause += " (cause inferred: the reference does not give this text's code)" if CODES.get(row["code"]) else " (cause inferred)"
    return "%s: %s" % (head, cause)


def _result(hostvars: Any, server: str, name: str) -> dict:
    value = (hostvars.get(server) or {}).get(name) if hasattr(hostvars, "get") else None
    return value if isinstance(value, dict) and not value.get("skipped") else {}


def group_cause(results: list, group_view: Any = None) -> dict | None:
    """The job's group's cause (its first failure): from a server's ``training_job state=diagnose`` result (rank 0's
    server reads ``group.json`` there), else from ``group_view``, the controller's copy the watch kept (its text, or
    the view itself); None when neither has one."""
    for result in results:
        if isinstance(result.get("group_cause"), dict):
            return result["group_cause"]
    if isinstance(group_view, str):
        try:
            group_view = json.loads(group_view) if group_view.strip() else None
        except ValueError:
            group_view = None
    cause = group_view.get("cause") if isinstance(group_view, dict) else None
    return cause if isinstance(cause, dict) else None


def from_hostvars(servers: list, hostvars: Any, names: dict, connect_timeout: float = 120.0, group_view: Any = None) -> dict:
    """The diagnosis of a job from each server's registered results (``playbooks/diagnose.yml``).

    ``names``: the registered variables, ``{"job": training_job state=diagnose, "npu": hccn_facts, "clock":
    clock_offset, "firewall": host_firewall in check mode}``. ``group_view``: the job's group view the controller
    kept (``<controller_dir>/<job_id>/group.json``, its text), for when no server returned the group's cause. Returns
    :func:`diagnose`'s dict plus ``job_id``, ``ranks`` (every failed or stopped rank's first error), ``table`` (text
    lines, then one per server not read), ``live`` (what each server's checks read), ``unread`` (servers without the
    job, or whose read failed, and why) and ``group_cause`` (the job's group's first failure, None if unknown).
    """
    results: list = []
    findings: list = []
    live: dict = {"devices": {}, "firewall": {}, "packet_filter": {}, "clock": {}, "leftovers": {}, "ports": {}, "job_ports": {}}
    job_ids: list = []
    unread: dict = {}
    for server in servers:
        job = _result(hostvars, server, names["job"])
        if not job or job.get("failed") or "ranks" not in job:
            unread[server] = str(job.get("msg") or "not read")
            continue
        job_ids += [job["job_id"]] if job.get("job_id") and job["job_id"] not in job_ids else []
        results.append(job)
        for rank in job["ranks"]:
            if rank.get("state") not in ("failed", "stopped"):
                continue
            plog = rank.get("plog") or {}
            tail = rank.get("tail") or []
            findings.append(
                {
                    "server": server,
                    "rank_id": rank["rank_id"],
                    "device_id": rank["device_id"],
                    "state": rank["state"],
                    "rc": rank.get("rc"),
                    "ended": rank.get("ended"),
                    "clock_offset": rank.get("clock_offset"),
                    "cause": rank.get("error"),
                    "last_line": tail[-1] if tail else "",
                    "plog_files": plog.get("files") or [],
                    "error": first_error(tail, plog.get("lines") or []),
                    "torch_error": rank.get("torch_error") if isinstance(rank.get("torch_error"), dict) else None,
                }
            )
        npu = _result(hostvars, server, names["npu"])
        devices = ((npu.get("ansible_facts") or {}).get("ascend_npu") or {}).get("devices") or []
        live["devices"][server] = {int(d["device_id"]): d for d in devices if isinstance(d, dict) and "device_id" in d}
        clock = _result(hostvars, server, names["clock"])
        if isinstance(clock.get("offset"), (int, float)):
            live["clock"][server] = clock["offset"]
        firewall = _result(hostvars, server, names["firewall"])
        packet: dict = job["packet_filter"] if isinstance(job.get("packet_filter"), dict) else {}
        # ufw or firewalld (host_firewall), then the packet filter as the kernel holds it (iptables, nftables)
        live["firewall"][server] = "; ".join(
            [firewall.get("found") or ("unknown: %s" % firewall["msg"] if firewall.get("msg") else "not read")]
            + (["packet filter: %s" % packet["found"]] if packet.get("found") else [])
        )
        live["packet_filter"][server] = [b["text"] for b in packet.get("blocks") or [] if b.get("text")]
        live["leftovers"][server] = [b["detail"] for b in job.get("busy") or [] if b.get("detail")]
        job_ports = job.get("job_ports") or {}
        live["job_ports"][server] = job_ports
        live["ports"][server] = [
            "TCP port %s%s is listened on by %s" % (port, " (%s)" % job_ports[port] if port in job_ports else "", who)
            for port, who in sorted((job.get("ports_in_use") or {}).items(), key=lambda item: int(item[0]))
        ]
    cause = group_cause(results, group_view)
    out = diagnose(findings, live, connect_timeout, group_first_rank(cause))
    out.update(
        job_id=job_ids[0] if len(job_ids) == 1 else job_ids or None,
        group_cause=None if cause is None else {k: cause[k] for k in CAUSE_KEYS if k in cause},
        ranks=[
            {
                "server": f["server"],
                "rank_id": f["rank_id"],
                "device_id": f["device_id"],
                "state": f["state"],
                "rc": f["rc"],
                "code": (f["error"] or {}).get("code"),
                "time": (f["error"] or {}).get("time"),
                "message": (f["error"] or {}).get("message") or (f["torch_error"] or {}).get("exception") or f["last_line"],
                "plog_files": f["plog_files"],
                # torch's @record error file: the exception and its traceback's last lines (None when the rank wrote none)
                "exception": (f["torch_error"] or {}).get("exception"),
                "traceback": (f["torch_error"] or {}).get("traceback") or [],
            }
            for f in sorted(findings, key=lambda f: f["rank_id"])
        ],
        live={k: v for k, v in live.items() if k != "devices"},
        unread=unread,
        table=table(out["rows"]) + ["%s: not read - %s" % item for item in sorted(unread.items())],
    )
    return out


def table(rows: list, causes: int = 3) -> list:
    """The diagnosis table as text lines: one row per code, its first ``causes`` likely causes numbered."""
    shown = [
        dict(
            row,
            code=(row["code"] or "-") + (" (inferred)" if row["inferred"] and row["code"] else ""),
            likely_causes="; ".join("%d. %s" % (i + 1, c) for i, c in enumerate(row["likely_causes"][:causes])),
        )
        for row in rows
    ]
    return text_table(shown, ["code", "ranks", "from", "first_rank", "meaning", "likely_causes"])
