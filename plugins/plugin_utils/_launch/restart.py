# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""After a failed attempt: start the job again, or end it - the one place the restart policy is decided.

The launch role runs a job as attempts (``max_restarts`` after the first). Once an attempt has ended
failed, its report (the summary, the watch's result and, for a failed job, the diagnosis) goes through
:func:`decide`, which says whether the next attempt starts and why not:

- **nothing to restart**: the job succeeded, or a person stopped it (Ctrl-C, ``ascend.cluster.stop``,
  a SIGTERM to the controller), or no restart is left;
- **a server or device at fault** - a lost server; the diagnosis's live evidence on one server (a link
  DOWN, net_health not Success, a device held by a foreign process): it is left out (:func:`members_after`).
  The job starts again with the same ``np`` on the servers left, when they can run it, else with spares
  (inventory group ``ascend_spares``: the same chip and enough healthy devices) in its place; without one
  it runs smaller when ``min_np`` allows (the largest ``np`` the chip rules allow on what is left), else it
  ends naming the server. A spare's facts are read only when one is needed: the first decision then asks
  for them (``read_spares``) and the launch decides again once they are read;
- **a crash loop** - the same rank failing with the same cause as in the attempt before, having got no
  further (its last log line is the same): the job ends naming that cause;
- **otherwise** the job starts again on the same servers, after ``restart_backoff_s``.

Each attempt leaves a record (:func:`record`): its job id, cause, failing rank's signature, the servers
left out and taken in for the next attempt (and its ``np`` when that changed), and - filled by the next attempt's report - the seconds from the failure
to every rank of the next attempt started, and the step that attempt resumed from when its training said so
(``resumed_step``). :func:`summarised` adds them to the job's summary.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

from ansible_collections.ascend.cluster.plugins.plugin_utils._errors import ClusterSpecError
from ansible_collections.ascend.cluster.plugins.plugin_utils._launch import diagnosis as diagnose
from ansible_collections.ascend.cluster.plugins.plugin_utils._rank.chip_rules import resolve_chip
from ansible_collections.ascend.cluster.plugins.plugin_utils._rank.select import possible_counts, read_available, select_devices

# the diagnosis's live evidence that puts the fault on a server or one of its devices (plugin_utils/_launch/diagnosis KINDS)
SERVER_FAULTS = ("link", "net_health", "leftover")
LOST = "lost (stopped answering)"
SPARES_GROUP = "ascend_spares"


def _last_line(message: str) -> str:
    lines = [line.strip() for line in str(message or "").splitlines() if line.strip()]
    return lines[-1] if lines else ""


def signature(failure: Mapping[str, Any] | None, message: str) -> dict:
    """What makes two failures "the same": the rank, how it ended, and how far it got (its last log line)."""
    failure = failure or {}
    return {
        "rank_id": failure.get("rank_id"),
        "cause": str(failure.get("outcome") or failure.get("error") or ""),
        "last_line": _last_line(message),
    }


def at_fault(watch: Mapping[str, Any] | None, diagnosis: Mapping[str, Any] | None) -> list:
    """``[{"server", "why"}]``: the servers the failure is put on - lost ones, then the diagnosis's live evidence."""
    found: list = []
    seen: set = set()
    for host in (watch or {}).get("lost_hosts") or []:
        if host not in seen:
            seen.add(host)
            found.append({"server": str(host), "why": LOST})
    for evidence in (diagnosis or {}).get("seen") or []:
        if not isinstance(evidence, Mapping) or evidence.get("kind") not in SERVER_FAULTS or not evidence.get("server"):
            continue
        if evidence["server"] not in seen:
            seen.add(evidence["server"])
            found.append({"server": str(evidence["server"]), "why": str(evidence.get("text") or evidence["kind"])})
    return found


def interrupted_by_a_person(summary: Mapping[str, Any], watch: Mapping[str, Any] | None) -> str:
    """Who stopped the job when a person did (no restart then), else ''."""
    if (watch or {}).get("interrupted"):
        return "the controller was interrupted"
    failure = summary.get("failure") or {}
    if failure.get("stopped_by"):
        return str(failure["stopped_by"])
    return ""


def host_of(name: str, servers: Sequence[Mapping[str, Any]]) -> str:
    """The inventory host a fault names (a lost host is named so; the diagnosis names a server id or address)."""
    for server in servers:
        if name in (server.get("host"), server.get("server_id"), server.get("host_ip")):
            return str(server.get("host"))
    return name


def healthy(server: Mapping[str, Any]) -> tuple[dict, list]:
    """The server with only its healthy devices, and one line for each device left out.

    Healthy by the rule that puts a fault on a server (:data:`SERVER_FAULTS`, the diagnosis's ``evidence``: a link
    DOWN, net_health not Success - Init without a netdetect address says nothing), with a device IP and read without
    an error: what a spare must be, so that the diagnosis would not leave it out again."""
    host = str(server.get("host"))
    problems = []
    devices = []
    for device in server.get("devices") or []:
        device_id = device.get("device_id")
        found = [
            e["text"]
            for e in diagnose.evidence([(host, device_id)], {"devices": {host: {device_id: device}}})
            if e["kind"] in SERVER_FAULTS
        ]
        if device.get("error"):
            found.append(f"{host} device {device_id} could not be read")
        if not device.get("device_ip"):
            found.append(f"{host} device {device_id} has no device IP")
        if found:
            text = found[0].split(" - ")[0]
            problems.append(text[len(host) + 1 :] if text.startswith(f"{host} ") else text)
        else:
            devices.append(device)
    return dict(server, devices=devices), problems


def _chip_of(servers: Sequence[Mapping[str, Any]]) -> Any:
    return next((server.get("chip") for server in servers if server.get("chip")), None)


def _selected(servers: list, np: int, chip: Any, allow_partial: bool, spread: bool) -> list | None:
    """The servers (hosts) an ``np``-rank job would run on, by the rank_table role's selection; None when it cannot."""
    if not servers:
        return None
    try:
        chosen = select_devices(servers, np, chip=chip, allow_partial_servers=allow_partial, spread=spread)
    except ClusterSpecError:
        return None
    return [str(server["host"]) for server in chosen]


def members_after(
    left_out: Sequence[str],
    servers: Sequence[Mapping[str, Any]],
    spares: Sequence[Mapping[str, Any]],
    np: int,
    min_np: int = 0,
    allow_partial: bool = False,
    spread: bool = True,
) -> dict:
    """Who runs the next attempt once ``left_out`` (inventory hosts) are left out.

    ``servers``: the servers the attempt was laid out on (``ascend_all_servers``: ``{host, server_id, chip, devices}``,
    every device of each); ``spares``: ``{host, server}`` for each spare that may be taken in, in inventory order, with
    ``server`` its entry from its facts (None: they could not be read). In this order: the servers left, when they can
    still run ``np``; else with spares taken in one after the other (the same chip, only their healthy devices counted)
    until they can; else, when ``min_np`` > 0, the largest ``np`` >= ``min_np`` the chip rules allow on the servers left
    and the spares that fit (``_rank.select.possible_counts``, as the rank table role selects).

    ``{"members": [host, ...] | None, "np", "taken_in", "shrunk", "spares": [why each spare was not taken]}``;
    ``members`` None when nothing can run the job.
    """
    left = [s for s in servers if s.get("host") not in left_out]
    chip = _chip_of(servers)
    fitting: list = []
    unfit: list = []
    for spare in spares:
        host, server = str(spare.get("host")), spare.get("server")
        if server is None:
            unfit.append(f"{host}: its NPUs could not be read")
        elif chip and server.get("chip") and server["chip"] != chip:
            unfit.append(f"{host}: chip {server['chip']}, not {chip}")
        else:
            usable, problems = healthy(server)
            if usable["devices"]:
                fitting.append(usable)
                if problems:
                    unfit.append(f"{host}: {len(problems)} device(s) left out ({'; '.join(problems)})")
            else:
                unfit.append(f"{host}: no healthy device ({'; '.join(problems) or 'none reported'})")
    base = {"np": np, "taken_in": [], "shrunk": False, "spares": unfit}
    members = _selected(left, np, chip, allow_partial, spread)
    if members is not None:
        return dict(base, members=members)
    tried = list(left)
    for spare in fitting:
        tried.append(spare)
        members = _selected(tried, np, chip, allow_partial, spread)
        if members is not None:
            return dict(base, members=members, taken_in=[h for h in members if h in {s["host"] for s in fitting}])
    taking = [s["host"] for s in fitting]
    if fitting:
        unfit.append(f"{', '.join(taking)}: too few devices with the servers left to run np={np}")
    if min_np > 0 and tried:
        profile = resolve_chip(chip)
        counts = [n for n in possible_counts(profile, read_available(tried, profile), allow_partial) if min_np <= n <= np]
        for smaller in sorted(counts, reverse=True):
            members = _selected(tried, smaller, chip, allow_partial, spread)
            if members is not None:
                return dict(base, members=members, np=smaller, shrunk=True, taken_in=[h for h in members if h in taking])
    return dict(base, members=None)


def possible_np(servers: Sequence[Mapping[str, Any]], allow_partial: bool = False) -> list:
    """Every np the chip rules allow on ``servers`` (the refusal's hint)."""
    profile = resolve_chip(_chip_of(servers))
    try:
        return possible_counts(profile, read_available(list(servers), profile), allow_partial)
    except ClusterSpecError:
        return []


def _fault_text(faults: Sequence[Mapping[str, Any]]) -> str:
    return "; ".join(f"{f['server']}: {f['why']}" for f in faults)


def _leave_out(
    decision: dict,
    faults: list,
    attempts: Sequence[Mapping[str, Any]],
    max_restarts: int,
    layout: Mapping[str, Any] | None,
) -> dict:
    """The decision for a fault on a server (see :func:`decide`)."""
    layout = layout or {}
    servers = [s for s in layout.get("servers") or [] if isinstance(s, Mapping)]
    named = _fault_text(faults)
    left_out = []
    for fault in faults:
        host = host_of(fault["server"], servers)
        if host not in left_out:
            left_out.append(host)
    gone = set(left_out)
    for attempt in attempts:
        gone.update(attempt.get("left_out") or [])
    members_now = {str(s.get("host")) for s in servers}
    candidates = [str(h) for h in layout.get("spares_group") or [] if str(h) not in gone and str(h) not in members_now]
    facts = {str(s.get("host")): s for s in layout.get("spares") or [] if isinstance(s, Mapping) and s.get("host")}
    np = int(layout.get("np") or 0)
    if not servers or np <= 0:
        return dict(
            decision,
            why=f"not restarted: the fault is on a server ({named}); the job's servers are not known here to leave it out - "
            "fix or remove it from the inventory and run train.yml again",
        )
    left = [s for s in servers if s.get("host") not in gone]
    needs_spares = _selected(left, np, _chip_of(servers), bool(layout.get("allow_partial")), bool(layout.get("spread", True))) is None
    unread = [h for h in candidates if h not in facts]
    if needs_spares and unread and not layout.get("spares_read"):
        return dict(
            decision, read_spares=unread, left_out=left_out, why=f"reading the spares {', '.join(unread)} to replace {', '.join(left_out)}"
        )
    min_np = int(layout.get("min_np") or 0)
    plan = members_after(
        sorted(gone),
        servers,
        [{"host": h, "server": facts.get(h)} for h in candidates],
        np,
        min_np=min_np,
        allow_partial=bool(layout.get("allow_partial")),
        spread=bool(layout.get("spread", True)),
    )
    told = ", ".join(f"{host_of(f['server'], servers)} ({f['why']})" for f in faults)
    if plan["members"] is None:
        spares_said = "; ".join(plan["spares"]) if plan["spares"] else f"the inventory group {SPARES_GROUP} has no server left to take in"
        possible = [n for n in possible_np(left, bool(layout.get("allow_partial"))) if n < np]
        smaller = (
            f"allow a smaller job with -e min_np=M (role: ascend_launch_min_np=M; np the servers left can run: "
            f"{', '.join(str(n) for n in possible[-8:])})"
            if possible and min_np <= 0
            else f"lower min_np (no np from {min_np} to {np} runs on the servers left)"
            if min_np > 0
            else "no smaller job runs on the servers left"
        )
        return dict(
            decision,
            left_out=left_out,
            why=f"not restarted: the fault is on a server ({named}) and no spare can take its place ({spares_said}) - add a server "
            f"with the same chip and enough healthy devices to the inventory group {SPARES_GROUP}, {smaller}, or fix or remove "
            f"{', '.join(left_out)} and run train.yml again",
        )
    done = len(attempts)
    head = f"restart {done + 1} of {max_restarts}: {told} left out"
    if plan["shrunk"]:
        took = f", {', '.join(plan['taken_in'])} taken in" if plan["taken_in"] else ""
        spares_said = "; ".join(plan["spares"]) if plan["spares"] else f"no server left in {SPARES_GROUP}"
        why = f"{head}{took}; no spare keeps np={np} ({spares_said}): the job runs smaller, np={plan['np']} (min_np={min_np})"
    elif plan["taken_in"]:
        why = f"{head}, replaced by {', '.join(plan['taken_in'])}"
    else:
        why = f"{head}; the servers left run np={np}"
    return dict(
        decision,
        restart=True,
        why=why,
        left_out=left_out,
        taken_in=plan["taken_in"],
        members=plan["members"],
        np=plan["np"],
        shrunk=plan["shrunk"],
        exclude=[str(h) for h in layout.get("play_hosts") or [] if str(h) not in plan["members"]],
    )


def decide(
    summary: Mapping[str, Any],
    watch: Mapping[str, Any] | None,
    diagnosis: Mapping[str, Any] | None,
    attempts: Sequence[Mapping[str, Any]],
    max_restarts: int,
    layout: Mapping[str, Any] | None = None,
) -> dict:
    """``{"restart": bool, "why": str, "at_fault": [...], "signature": {...}}`` for the attempt that just ended.

    ``attempts``: the records of the attempts before this one (:func:`record`), oldest first. ``layout``: what leaving a
    server out needs - ``servers`` (the attempt's, every device), ``np``, ``min_np``, ``allow_partial``, ``spread``,
    ``play_hosts``, ``spares_group`` (the play's spares, inventory order), ``spares`` (the server entries of the spares
    whose facts are read) and ``spares_read`` (the launch read every spare it was asked to). A fault on a server adds
    ``left_out`` and, with a restart, ``taken_in``, ``members`` (the hosts of the next attempt), ``np``, ``shrunk`` and
    ``exclude`` (the play's hosts the next rank table leaves out); ``read_spares`` (no restart yet): read these spares'
    facts and decide again.
    """
    failure = summary.get("failure")
    sig = signature(failure, str(summary.get("message") or ""))
    faults = at_fault(watch, diagnosis)
    base = {"restart": False, "at_fault": faults, "signature": sig}
    if failure is None:
        return dict(base, why="the job succeeded")
    person = interrupted_by_a_person(summary, watch)
    if person:
        return dict(base, why=f"stopped by a person ({person}): not restarted")
    done = len(attempts)
    if done >= max_restarts:
        said = "no restart was allowed (max_restarts is 0)" if max_restarts <= 0 else f"all {max_restarts} restart(s) were used"
        return dict(base, why=said)
    if faults:
        return _leave_out(base, faults, attempts, max_restarts, layout)
    if attempts:
        before = attempts[-1].get("signature") or {}
        if sig["rank_id"] is not None and all(before.get(k) == sig[k] for k in ("rank_id", "cause", "last_line")):
            return dict(
                base,
                why=f"not restarted: a crash loop - rank {sig['rank_id']} failed again with the same cause ({sig['cause']}) "
                f"and got no further than the attempt before (its last line: {sig['last_line'] or 'none'})",
            )
    return dict(base, restart=True, why=f"restart {done + 1} of {max_restarts}: on the same servers")


def failure_time(summary: Mapping[str, Any]) -> float | None:
    """When the attempt failed, in the controller's clock: its failing rank's end, else its first rank's end."""
    failure = summary.get("failure") or {}
    ranks = [r for r in summary.get("ranks") or [] if isinstance(r, Mapping) and isinstance(r.get("ended"), (int, float))]
    mine = [r["ended"] for r in ranks if r.get("rank_id") == failure.get("rank_id")]
    ends = mine or sorted(r["ended"] for r in ranks)
    return float(ends[0]) if ends else None


def all_started(summary: Mapping[str, Any]) -> float | None:
    """When every rank of the attempt had started (the controller's clock), None when one never did."""
    ranks = [r for r in summary.get("ranks") or [] if isinstance(r, Mapping)]
    starts = [float(r["started"]) for r in ranks if isinstance(r.get("started"), (int, float))]
    if not starts or len(starts) < len(ranks):
        return None
    return max(starts)


def record(attempt: int, job_id: str, summary: Mapping[str, Any], decision: Mapping[str, Any], failed_at: Any = None) -> dict:
    """The attempt as summary.json lists it (``restart_s`` is the next attempt's to fill)."""
    failure = summary.get("failure") or {}
    failed_at = failed_at if failed_at is not None else failure_time(summary)
    return {
        "attempt": attempt,
        "job_id": job_id,
        "ok": bool(summary.get("ok")),
        "line": summary.get("line"),
        "cause": failure.get("outcome") or failure.get("error") or failure.get("stopped_by"),
        "rank_id": failure.get("rank_id"),
        "server": failure.get("server"),
        "failed_at": failed_at,
        "signature": decision.get("signature"),
        "decision": decision.get("why"),
        "left_out": list(decision.get("left_out") or []) if decision.get("restart") else [],
        "taken_in": list(decision.get("taken_in") or []),
        "at_fault": list(decision.get("at_fault") or []),
        "np": decision.get("np") if decision.get("restart") and decision.get("members") is not None else None,
        "shrunk": bool(decision.get("shrunk")),
        "restart_s": None,
        "resumed_step": None,
    }


def started_again(attempts: Sequence[Mapping[str, Any]], first_start: Any, resumed_step: Any = None) -> list:
    """The attempts with the last one's ``restart_s`` filled (from its failure to every rank of this attempt started) and
    its ``resumed_step`` (the step this attempt resumed from, when its training said so)."""
    out = [dict(a) for a in attempts]
    if out and out[-1].get("failed_at") is not None and first_start is not None:
        out[-1]["restart_s"] = round(float(first_start) - float(out[-1]["failed_at"]), 3)
    if out and resumed_step is not None:
        out[-1]["resumed_step"] = int(resumed_step)
    return out


def resumed_step(steps: Any) -> int | None:
    """The step an attempt resumed from, from what its servers' ranks said (``{rank: step}`` per server, as
    ``training_results`` returns ``resumed``): rank 0's, else the lowest any rank said; None when none did."""
    said: dict = {}
    for server in steps or []:
        for rank, step in (server or {}).items() if isinstance(server, Mapping) else []:
            if isinstance(step, int) and not isinstance(step, bool):
                said[int(rank)] = step
    if not said:
        return None
    return said[0] if 0 in said else min(said.values())


def _clock(when: Any) -> str:
    return time.strftime("%H:%M:%S", time.localtime(float(when))) if isinstance(when, (int, float)) else "?"


def _told(attempt: Mapping[str, Any]) -> str:
    """One earlier attempt in the summary line: ``J: rank 3 exit 1`` or ``h2 lost at 12:03:04, replaced by h3``."""
    left = list(attempt.get("left_out") or [])
    if not left:
        what = (
            f"rank {attempt.get('rank_id')} {attempt.get('cause')}"
            if attempt.get("rank_id") not in (None, -1)
            else str(attempt.get("cause") or "failed")
        )
        return f"{attempt.get('job_id')}: {what}"
    lost = any(f.get("why") == LOST for f in attempt.get("at_fault") or [] if isinstance(f, Mapping))
    text = f"{', '.join(left)} {'lost' if lost else 'at fault'} at {_clock(attempt.get('failed_at'))}"
    taken = list(attempt.get("taken_in") or [])
    if attempt.get("shrunk"):
        text += (f", {', '.join(taken)} taken in" if taken else "") + f", np now {attempt['np']}"
    elif taken:
        text += f", replaced by {', '.join(taken)}"
    else:
        text += ", left out"
    return text


def summarised(summary: Mapping[str, Any], attempts: Sequence[Mapping[str, Any]], resumed: Any = None) -> dict:
    """The job's summary with its earlier attempts: ``attempts`` and the line ``... after 1 restart (J: rank 3 exit 1;
    4.2 s to restart)`` or ``... after 1 restart (h2 lost at 12:03:04, replaced by h3; 14 s to restart)``.

    ``resumed``: what this attempt's servers said of the step their ranks resumed from (:func:`resumed_step`)."""
    out = dict(summary)
    if not attempts:
        return out
    attempts = started_again(attempts, all_started(summary), resumed_step(resumed))
    out["attempts"] = attempts
    told = []
    for a in attempts:
        took = f"; {a['restart_s']:g} s to restart" if isinstance(a.get("restart_s"), (int, float)) else ""
        told.append(f"{_told(a)}{took}")
    count = len(attempts)
    out["line"] = f"{summary.get('line')} after {count} restart{'s' if count > 1 else ''} ({'; '.join(told)})"
    return out
