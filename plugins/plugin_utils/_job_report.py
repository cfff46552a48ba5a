# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The per-rank rows the launch prints (the report after a watched job, status.yml's table), and the
job's summary (:func:`job_summary`: one line, a short table, the JSON document of docs/summaries.md).

Each server's task registered one result with a ``ranks`` list (``training_watch`` or
``training_job state=status``); the rows are every server's ranks, each named with its server
(the address the watch reported, else the inventory name), in rank order.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from ansible_collections.ascend.cluster.plugins.module_utils._job_control import controller_time, fail_fast, stopped_by_its_runner
from ansible_collections.ascend.cluster.plugins.module_utils._job_procs import signal_name
from ansible_collections.ascend.cluster.plugins.plugin_utils._errors import ClusterSpecError
from ansible_collections.ascend.cluster.plugins.plugin_utils._text_table import text_table
from ansible_collections.ascend.cluster.plugins.plugin_utils._watch import failure_message, others_words, unconfirmed

LAST_LINE_CHARS = 60


def clock_text(when: float | None) -> str | None:
    """An epoch time as the controller's local time of day to the millisecond, ``12:03:04.125`` (None stays None)."""
    if when is None:
        return None
    whole, millis = divmod(round(when * 1000), 1000)
    return time.strftime("%H:%M:%S", time.localtime(whole)) + f".{millis:03d}"


def rank_rows(hosts: Sequence[str], hostvars: Mapping[str, Any], result: str) -> list[dict[str, Any]]:
    """Every rank of the ``result`` each host registered, with ``server``, ``job_id``, ``last_line`` and, in the
    controller's clock (each rank's time less its server's recorded clock offset), ``start_time`` and ``end_time``.

    A result of the whole job (``group``: the watch, run once for the play and registered on every host) holds every
    rank, each with its ``server``: it is read once.
    """
    if isinstance(hosts, (str, Mapping)) or not isinstance(hosts, Sequence):
        raise ClusterSpecError(f"the input must be the play's host names, got {hosts!r}")
    rows = []
    for host in hosts:
        try:
            registered = hostvars[host].get(result)
        except KeyError as exc:
            raise ClusterSpecError(f"host {host!r} is not in hostvars") from exc
        if not isinstance(registered, Mapping):
            continue  # the host did not take part, or its task did not run
        for rank in registered.get("ranks") or []:
            tail = rank.get("tail") or [""]
            rows.append(
                dict(
                    rank,
                    server=rank.get("server") if registered.get("group") else registered.get("server") or host,
                    job_id=registered.get("job_id"),
                    last_line=str(tail[-1])[-LAST_LINE_CHARS:],
                    start_time=clock_text(controller_time(rank, "started")),
                    end_time=clock_text(controller_time(rank, "ended")),
                )
            )
        if registered.get("group"):
            break
    return sorted(rows, key=lambda row: int(row["rank_id"]))


SCHEMA = 1
# The table of the summary; the OK rows (state done or running) after the others, a few of them only.
SUMMARY_COLUMNS = ("server", "device_id", "rank_id", "state", "outcome", "duration_s")
OK_STATES = ("done", "running")
OK_ROWS = 4
MORE_HINT = "-e ascend_report_all_rows=true lists them"
# A job whose ranks still wait at its gate (status.yml finds one whose launch was interrupted or killed while staging).
STAGED_HINT = "waiting at a gate that has not opened: unless their launch is still under way, ascend.cluster.stop releases them"


def seconds(value: Any) -> float | None:
    """A duration rounded for people: 3.121 -> 3.1, 0.04 -> 0.04, 95.7 -> 96.0 (None stays None)."""
    if value is None or isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    if number < 0.1:
        return round(number, 2)
    return round(number, 1) if number < 60 else float(round(number))


def _rounded(when: float | None) -> float | None:
    return None if when is None else round(when, 3)


def _signal(rc: Any) -> str | None:
    return signal_name(-rc) if isinstance(rc, int) and not isinstance(rc, bool) and rc < 0 else None


def rank_outcome(rank: Mapping[str, Any], fail_fast: bool = False) -> str:
    """How one rank ended, in words: ``exit 0``, ``exit 1``, ``killed by SIGKILL``,
    ``stopped by fail-fast (SIGTERM)`` (``fail_fast``: another rank failed), ``stopped (SIGTERM)``; a failed rank
    its runner stopped (it stalled, it ran too long) by why: ``stalled: no progress for 600 s; last line: "..."``."""
    state, rc = rank.get("state"), rank.get("rc")
    if state == "failed" and stopped_by_its_runner(rank.get("error")):
        return str(rank["error"])
    sig = _signal(rc)
    if state == "stopped":
        how = "stopped by fail-fast" if fail_fast else "stopped"
        return f"{how} ({sig})" if sig else (f"{how} (exit {rc})" if rc is not None else how)
    if state in ("done", "failed"):
        if sig:
            return f"killed by {sig}"
        if rc is not None:
            return f"exit {rc}"
        return str(rank.get("error") or state)
    return str(state or "unknown")


def _first_failure(hosts: Sequence[str], hostvars: Mapping[str, Any], result: str) -> tuple[dict | None, str]:
    """The job's first failure and the message it was told with.

    Every watcher returns the same failure, but a follower may return it as it was first claimed
    (``early``: from the abort line, without the log tail) when the watcher of the failed rank's
    server completed it only after the follower had stopped waiting (a link cut fails ranks on two
    servers at once, and under load the completing poll takes seconds). The completed record of the
    same rank wins, whichever host returned it.
    """
    found = []
    for host in hosts:
        registered = hostvars[host].get(result)
        if isinstance(registered, Mapping) and isinstance(registered.get("first_failure"), Mapping):
            found.append((dict(registered["first_failure"]), str(registered.get("msg") or "")))
    if not found:
        return None, ""
    first = found[0][0]
    if first.get("early"):
        same_rank = (first.get("server"), first.get("rank_id"))
        completed = [f for f in found if not f[0].get("early") and (f[0].get("server"), f[0].get("rank_id")) == same_rank]
        if completed:
            return completed[0]
    return found[0]


def _job_fail_fast(hosts: Sequence[str], hostvars: Mapping[str, Any], result: str) -> bool:
    """The job's fail-fast (``_job_control.fail_fast``) as the first registered result that says it shows it (the watch
    of the whole job: its group's view), else the default."""
    for host in hosts:
        registered = hostvars[host].get(result)
        if isinstance(registered, Mapping) and "fail_fast" in registered:
            return fail_fast(dict(registered))
    return fail_fast(None)


def group_problem(hosts: Sequence[str], hostvars: Mapping[str, Any], result: str) -> str | None:
    """The job's group's problem as the servers' ``result`` show it (``group_health``, ``training_job`` status and
    diagnose): the coordinator's server's own (a crash, its silence, a stall), else the servers that lost the
    coordinator, the first one's words; None when none says one."""
    coordinator, members = None, []
    for host in hosts:
        registered = hostvars[host].get(result) if host in hostvars else None
        health = registered.get("group_health") if isinstance(registered, Mapping) else None
        if not isinstance(health, Mapping) or not health.get("problem"):
            continue
        if health.get("coordinator") is not None and coordinator is None:
            coordinator = str(health["problem"])
        elif health.get("member") == "lost":
            members.append((str(host), str(health["problem"])))
    if coordinator is not None:
        return coordinator
    if not members:
        return None
    (first, said), others = members[0], [h for h, _p in members[1:]]
    return f"{first} {said}" + (f" (so did {', '.join(others)})" if others else "")


def with_group_problem(diagnosis: dict[str, Any], hosts: Sequence[str], hostvars: Mapping[str, Any], result: str) -> dict[str, Any]:
    """The diagnosis (``plugin_utils/_diagnose.from_hostvars``) with ``group_problem`` (:func:`group_problem` over the
    servers' ``training_job state=diagnose`` results) and, when there is one, its line led by it."""
    problem = group_problem(hosts, hostvars, result)
    out = dict(diagnosis, group_problem=problem)
    if problem:
        out["line"] = f"{problem}; {diagnosis.get('line')}"
    return out


def _line(
    kind: str, job_id: str, ranks: list[dict[str, Any]], failure: dict | None, duration: float | None, job_fail_fast: bool = True
) -> str:
    name = f"{kind} {job_id}".strip()
    counts = Counter(r["state"] for r in ranks)
    stopped = counts.get("stopped", 0)
    if failure is None:
        if ranks and counts.get("done", 0) == len(ranks):
            took = f" in {duration:g} s" if duration is not None else ""
            return f"{name}: {len(ranks)}/{len(ranks)} ranks done{took}"
        if not ranks:
            return f"{name}: no ranks found"
        line = f"{name}: " + ", ".join(f"{counts[state]} {state}" for state in sorted(counts))
        return f"{line} ({STAGED_HINT})" if counts.get("staged") else line
    if "stopped_by" in failure:
        return f"STOPPED: {name}: {failure['stopped_by']}; {stopped} of {len(ranks)} ranks stopped"
    if "lost" in failure:  # a server stopped answering, or its runners died without recording an exit
        return f"FAILED: {name}: {failure_message(failure, unconfirmed(failure, ranks), ranks)}"
    if failure.get("rank_id", -1) is None or int(failure.get("rank_id", -1)) < 0:
        return f"FAILED: {name}: {failure.get('error') or 'the job failed'}"
    how = rank_outcome(dict(failure, state="failed"))
    if failure.get("early") and failure.get("error") and how != failure["error"]:
        how = f"{how} - {failure['error']}"
    if failure.get("rc") is None and failure.get("error"):  # its command never started (its table changed, its device refused)
        how = f"could not start: {failure['error']}"
    if not job_fail_fast and failure.get("rc") is not None:  # nobody was stopped for it: how the others ended
        return (
            f"FAILED: {name}: rank {failure['rank_id']} (server {failure.get('server')}, device {failure.get('device_id')}) {how}; "
            f"{others_words(failure, ranks)}"
        )
    return (
        f"FAILED: {name}: rank {failure['rank_id']} (server {failure.get('server')}, device {failure.get('device_id')}) {how}; "
        f"{stopped} stopped"
    )


def job_summary(
    hosts: Sequence[str],
    hostvars: Mapping[str, Any],
    result: str,
    job_id: str = "",
    kind: str = "train",
    all_rows: bool = False,
    ok_rows: int = OK_ROWS,
    failure: Mapping[str, Any] | None = None,
    message: str = "",
) -> dict[str, Any]:
    """The job's summary from the ``result`` each host registered (see docs/summaries.md).

    ``failure`` and ``message``: the job's first failure and its message when the caller knows them (the watch of the
    whole job), else they are read from the registered results.

    ``{schema, kind, job_id, ok, line, group_problem, fail_fast, duration_s, counts, failure, message, ranks, table}``
    (``fail_fast``: the job's, from the watch's result; ``group_problem``: a crashed or lost coordinator the servers'
    results name, :func:`group_problem`, also added to the line):
    ``line`` the one line to print last; ``message`` the first failure's full message (its log
    tail), '' when none; ``table`` the rank table with the failed ranks first and, unless
    ``all_rows``, only ``ok_rows`` of the OK ones.
    """
    rows = rank_rows(hosts, hostvars, result)
    job_id = job_id or next((str(r["job_id"]) for r in rows if r.get("job_id")), "")
    if failure is None:
        failure, message = _first_failure(hosts, hostvars, result)
    else:
        failure = dict(failure)
    job_fail_fast = _job_fail_fast(hosts, hostvars, result)
    # a rank stopped because another failed says so; only a job with fail-fast stops ranks for a failure
    stopped_for_failure = (
        job_fail_fast and failure is not None and "stopped_by" not in failure and int(failure.get("rank_id", -1) or 0) >= 0
    )
    ranks = []
    for row in rows:
        ranks.append(
            {
                "rank_id": row.get("rank_id"),
                "server": row.get("server"),
                "device_id": row.get("device_id"),
                "state": row.get("state"),
                "rc": row.get("rc"),
                "outcome": rank_outcome(row, stopped_for_failure),
                "duration_s": seconds(row.get("duration")),
                # in the controller's clock, comparable across servers
                "started": _rounded(controller_time(row, "started")),
                "ended": _rounded(controller_time(row, "ended")),
                "log": os.path.normpath(str(row["log"])) if row.get("log") else None,
            }
        )
    # first start to last end, across servers: in the controller's clock
    started = [t for t in (controller_time(r, "started") for r in rows) if t is not None]
    ended = [t for t in (controller_time(r, "ended") for r in rows) if t is not None]
    duration = seconds(max(ended) - min(started)) if started and len(ended) == len(rows) else None
    ok = failure is None and bool(ranks) and all(r["state"] == "done" for r in ranks)
    table = text_table(
        sorted(ranks, key=lambda r: r["state"] != "failed"),  # the failed ranks, then the stopped ones, then the rest
        SUMMARY_COLUMNS,
        ok_column="state",
        ok_values=OK_STATES,
        max_ok=None if all_rows else int(ok_rows),
        more_hint=MORE_HINT,
    )
    problem = group_problem(hosts, hostvars, result)
    brief = None
    if failure is not None:
        brief = {k: failure.get(k) for k in ("rank_id", "server", "device_id", "rc", "error", "stopped_by") if k in failure}
        if "stopped_by" not in failure and int(failure.get("rank_id", -1) or 0) >= 0:
            brief["outcome"] = rank_outcome(dict(failure, state="failed"))
    return {
        "schema": SCHEMA,
        "kind": kind,
        "job_id": job_id,
        "ok": ok,
        "line": _line(kind, job_id, ranks, failure, duration, job_fail_fast) + (f"; {problem}" if problem else ""),
        "group_problem": problem,
        "fail_fast": job_fail_fast,
        "duration_s": duration,
        "counts": dict(sorted(Counter(str(r["state"]) for r in ranks).items())),
        "failure": brief,
        "message": message,
        "ranks": ranks,
        "table": table,
    }


def _stop_jobs(result: Any) -> list[Mapping[str, Any]]:
    """The jobs one server's ``training_job state=stop`` result acted on (``jobs`` with job_id=all)."""
    if not isinstance(result, Mapping) or result.get("skipped"):
        return []
    if "jobs" in result:
        return [job for job in result["jobs"] if isinstance(job, Mapping)]
    return [result] if result.get("job_id") else []


def stop_summary(results: Mapping[str, Any], check_mode: bool = False) -> str:
    """One line saying what ``stop.yml`` stopped, from each server's registered stop result.

    ``results`` maps a server to its result. Per job: how many ranks were stopped on how many
    servers, and which needed SIGKILL; a server that could not be stopped (a failed result) is named.
    """
    per_job: dict[str, dict[str, Any]] = {}
    failed = sorted(str(h) for h, r in results.items() if isinstance(r, Mapping) and (r.get("failed") or r.get("unreachable")))
    for host, result in results.items():
        for job in _stop_jobs(result):
            entry = per_job.setdefault(str(job["job_id"]), {"stopped": 0, "killed": [], "servers": set()})
            entry["stopped"] += len(job.get("stopped") or [])
            entry["killed"] += [f"{host} rank {rank}" for rank in job.get("killed") or []]
            if job.get("stopped"):
                entry["servers"].add(str(host))
    verb = "would stop" if check_mode else "stopped"
    parts = []
    for job_id, entry in sorted(per_job.items()):
        if not entry["stopped"]:
            parts.append(f"job {job_id}: nothing was running")
            continue
        text = f"job {job_id}: {verb} {entry['stopped']} rank(s) on {len(entry['servers'])} server(s)"
        if entry["killed"]:
            text += "; SIGKILL needed for " + ", ".join(entry["killed"])
        parts.append(text)
    if not parts:
        parts.append("no job recorded on the selected servers: nothing to stop")
    if failed:
        parts.append("could not stop on " + ", ".join(failed) + " (see the error above; run stop.yml again)")
    return "stop: " + "; ".join(parts)
