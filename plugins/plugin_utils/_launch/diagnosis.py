# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Why a job failed: every rank's first Ascend error (``_launch/rank_error.py``) with what the live checks of its servers
show, in one table and one line.

Pure functions, used by the ``ascend.cluster.diagnosis`` filter (``playbooks/diagnose.yml``): :func:`diagnose` combines
every rank's finding with the live checks of the servers (link, net_health and TLS of the devices involved, firewall,
clock offsets, leftover processes, ports in use) into the rows of one table and one line: ``EI0006 on ranks 3, 11 from
12:03:04: h2 eth3 link DOWN - check the optics/cable``; the first failing rank first, by :func:`first_order` (the rank
the job's group named, as the ``FAILED:`` line does, else the clock-corrected order). :func:`from_hostvars` gathers
what each server's diagnose call read.
"""

from __future__ import annotations

import json
from typing import Any

from ansible_collections.ascend.cluster.plugins.module_utils._job.control import controller_time
from ansible_collections.ascend.cluster.plugins.module_utils._job.torch_error import describe as torch_error_line
from ansible_collections.ascend.cluster.plugins.plugin_utils._launch.rank_error import CODES, KINDS, cann_clock, first_error, meaning
from ansible_collections.ascend.cluster.plugins.plugin_utils._launch.watch import rank_ranges
from ansible_collections.ascend.cluster.plugins.plugin_utils._text_table import text_table


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
    ``{"kind", "server", "text"}``, what the restart policy reads, ``_launch.restart.at_fault``): one row per code (ranks, from, first
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
