# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""After a failed attempt: start the job again, or end it - the one place the restart policy is decided.

The launch role runs a job as attempts (``max_restarts`` after the first). Once an attempt has ended
failed, its report (the summary, the watch's result and, for a failed job, the diagnosis) goes through
:func:`decide`, which says whether the next attempt starts and why not:

- **nothing to restart**: the job succeeded, or a person stopped it (Ctrl-C, ``ascend.cluster.stop``,
  a SIGTERM to the controller), or no restart is left;
- **a server or device at fault** - a lost server; the diagnosis's live evidence on one server (a link
  DOWN, net_health not Success, a device held by a foreign process): the job ends naming it. Leaving
  it out and taking a spare in its place is not built yet (docs/launch.md, *Restarts*);
- **a crash loop** - the same rank failing with the same cause as in the attempt before, having got no
  further (its last log line is the same): the job ends naming that cause;
- **otherwise** the job starts again on the same servers, after ``restart_backoff_s``.

Each attempt leaves a record (:func:`record`): its job id, cause, failing rank's signature, the servers
left out and taken in (none yet), and - filled by the next attempt's report - the seconds from the failure
to every rank of the next attempt started. :func:`summarised` adds them to the job's summary.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

# the diagnosis's live evidence that puts the fault on a server or one of its devices (plugin_utils/_diagnose KINDS)
SERVER_FAULTS = ("link", "net_health", "leftover")


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
            found.append({"server": str(host), "why": "lost (stopped answering)"})
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


def decide(
    summary: Mapping[str, Any],
    watch: Mapping[str, Any] | None,
    diagnosis: Mapping[str, Any] | None,
    attempts: Sequence[Mapping[str, Any]],
    max_restarts: int,
) -> dict:
    """``{"restart": bool, "why": str, "at_fault": [...], "signature": {...}}`` for the attempt that just ended.

    ``attempts``: the records of the attempts before this one (:func:`record`), oldest first.
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
        named = "; ".join(f"{f['server']}: {f['why']}" for f in faults)
        return dict(
            base,
            why=f"not restarted: the fault is on a server ({named}); leaving it out or taking a spare is not supported yet - "
            "fix or remove it from the inventory and run train.yml again",
        )
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
        "left_out": [],
        "taken_in": [],
        "restart_s": None,
    }


def started_again(attempts: Sequence[Mapping[str, Any]], first_start: Any) -> list:
    """The attempts with the last one's ``restart_s`` filled: from its failure to every rank of this attempt started."""
    out = [dict(a) for a in attempts]
    if out and out[-1].get("failed_at") is not None and first_start is not None:
        out[-1]["restart_s"] = round(float(first_start) - float(out[-1]["failed_at"]), 3)
    return out


def summarised(summary: Mapping[str, Any], attempts: Sequence[Mapping[str, Any]]) -> dict:
    """The job's summary with its earlier attempts: ``attempts`` and the line ``... after 1 restart (rank 3 failed at
    12:03:04: exit code 1; 4.2 s to restart)``."""
    out = dict(summary)
    if not attempts:
        return out
    attempts = started_again(attempts, all_started(summary))
    out["attempts"] = attempts
    told = []
    for a in attempts:
        what = f"rank {a.get('rank_id')} {a.get('cause')}" if a.get("rank_id") not in (None, -1) else str(a.get("cause") or "failed")
        took = f"; {a['restart_s']:g} s to restart" if isinstance(a.get("restart_s"), (int, float)) else ""
        told.append(f"{a.get('job_id')}: {what}{took}")
    count = len(attempts)
    out["line"] = f"{summary.get('line')} after {count} restart{'s' if count > 1 else ''} ({'; '.join(told)})"
    return out
