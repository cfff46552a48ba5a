# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the controller's watch of a job (``ascend.cluster.training_watch``) makes of the job's group, as pure functions.

The job watches itself (``module_utils/_job_group``): its coordinator, on rank 0's server, keeps its view in
``<job_root>/<job_id>/group.json`` there. The watch reads that file and nothing else; here it is turned into progress
lines and, once the group has ended, the watch's result: every rank's final state, the job's first failure (the
group's cause) and the one message the play fails with. Nothing here reads a file, calls a module or looks at the clock.

A *failure* record, as the report (``_job_report``) reads it, is one of:

- a rank failed: ``{"server", "host", "rank_id", "device_id", "rc", "log", "tail", "error"}``;
- the job was stopped from outside (stop.yml, the controller's Ctrl-C, a signal to a runner):
  ``{"server", "host", "rank_id": -1, "stopped_by", "ranks"}``;
- a server's ranks were lost: ``{"server", "host", "rank_id": -1, "lost": [rank ids], "since", "error"}`` - the server
  stopped answering at ``since``, or (``since`` None) its runners died without recording an exit (``error`` says how);
- the job could not start or be watched: ``{"rank_id": -1, "error"}`` (with ``missing``: servers that never joined);
- the job's coordinator crashed, was lost, or lost every member at once: ``{"rank_id": -1, "coordinator": its host,
  "since", "error"}`` - no server is blamed (:func:`coordinator_gone`, and the group's own ``cause.coordinator``).
"""

from __future__ import annotations

import json
import time
from typing import Any, NamedTuple

from ansible_collections.ascend.cluster.plugins.module_utils import _job_control as control
from ansible_collections.ascend.cluster.plugins.module_utils import _job_group as group
from ansible_collections.ascend.cluster.plugins.module_utils._job_procs import signal_death

FINAL_STATES = ("done", "failed", "stopped")
LOST_AFTER = 2  # probes of the coordinator's server missed in a row that make it lost (one lost packet is not a dead host)


class Misses(NamedTuple):
    """Probes missed in a row (no answer in time, no sentinel, a connection failure) and when the first was sent."""

    in_a_row: int = 0
    since: float | None = None


def count_miss(misses: Misses, answered: bool, sent_at: float) -> Misses:
    """The misses after a probe sent at ``sent_at`` was ``answered`` or not: an answer starts over."""
    if answered:
        return Misses()
    return Misses(misses.in_a_row + 1, misses.since if misses.in_a_row else sent_at)


def parse_member(text: str) -> dict | None:
    """The member's view on the coordinator's server (``member.json``), None when missing or not one."""
    try:
        data = json.loads(text) if text else None
    except ValueError:
        return None
    return data if isinstance(data, dict) and isinstance(data.get("state"), str) else None


def _clock(when: Any) -> str:
    return time.strftime("%H:%M:%S", time.localtime(float(when))) if isinstance(when, (int, float)) and not isinstance(when, bool) else "?"


def coordinator_gone(view: dict | None, member: dict | None, stale_for: float, lost_after: float) -> dict | None:
    """Whether the job's coordinator is gone while its server still answers: ``{"how", "since", "error"}``, else None.

    - ``crashed``: ``group.json`` says so (the coordinator caught its own end; ``error``, and ``log`` where its stderr went);
    - ``lost``: the member on its server lost it (no word for ``lost_after``; its ``member.json``), and ``group.json`` is
      not being rewritten (``stale_for``: the controller's seconds since the watch last saw its ``updated`` change);
    - ``silent``: ``group.json`` not rewritten for ``lost_after`` and a heartbeat (the coordinator rewrites it every
      heartbeat round), whatever the member says (its supervisor may be gone too).
    """
    if not view or view.get("status") == group.ENDED:
        return None
    if view.get("status") == group.CRASHED:
        return {"how": "crashed", "since": view.get("crashed_at"), "error": str(view.get("error") or "?"), "log": view.get("log")}
    if member and member.get("state") == "lost" and stale_for > 2 * group.HEARTBEAT_S:
        return {"how": "lost", "since": member.get("updated"), "error": str(member.get("error") or "no word from it")}
    if stale_for > lost_after + group.HEARTBEAT_S:
        return {"how": "silent", "since": view.get("updated"), "error": f"its group.json was not rewritten for {stale_for:.1f} s"}
    return None


def coordinator_lost(job_id: str, host: str, gone: dict, view: dict | None) -> dict[str, Any]:
    """The watch's result when the job's coordinator is gone but its server answers (:func:`coordinator_gone`): every
    member stops its ranks when it loses the coordinator; the play then asks every server (its server too: it is not
    lost) for its ranks' real states. No server is blamed (``lost_hosts`` empty): a restart leaves none out."""
    endpoint = (view or {}).get("endpoint") or "?"
    what = {"crashed": "crashed", "lost": "was lost", "silent": "went silent"}[gone["how"]]
    error = f"the job's coordinator on {host} ({endpoint}) {what} at {_clock(gone.get('since'))}: {gone['error']}"
    if gone.get("log"):
        error += f" (its log: {gone['log']})"
    msg = f"{error}; every server stops its ranks when it loses the coordinator: each server's ranks follow, as it reports them"
    return _without_coordinator(job_id, {"rank_id": -1, "coordinator": host, "since": gone.get("since"), "error": error}, msg, [], [])


def _without_coordinator(job_id: str, failure: dict, msg: str, lost_hosts: list, ranks: list) -> dict[str, Any]:
    """The watch's result when it ended without the coordinator's last word (``coordinator_lost``: the play asks every
    server not in ``lost_hosts`` for its ranks)."""
    return {
        "group": True,
        "job_id": job_id,
        "failed": True,
        "changed": False,
        "coordinator_lost": True,
        "lost_hosts": lost_hosts,
        "ranks": ranks,
        "first_failure": failure,
        "msg": msg,
    }


def parse_group(text: str) -> dict | None:
    """The group's view from the text of ``group.json`` (None when it is missing, half-written or not a view)."""
    try:
        data = json.loads(text)
    except ValueError:
        return None
    return data if isinstance(data, dict) and isinstance(data.get("status"), str) else None


def ended(view: dict | None) -> bool:
    return bool(view) and view.get("status") == group.ENDED  # type: ignore[union-attr]


def progress_line(job_id: str, view: dict, clock: str) -> str:
    """``[J] 12:03:04 ranks: running 16 | rank 0: <its last log line>``, from the group's counts."""
    counts = view.get("counts") or {}
    shown = ", ".join(f"{state} {counts[state]}" for state in sorted(counts)) or "none reported yet"
    line = str(view.get("rank0_line") or "")
    status = view.get("status")
    prefix = "" if status in (group.RUNNING, group.ENDED) else f"{status}: "
    return f"[{job_id}] {clock} {prefix}ranks: {shown} | rank 0: {line[-160:]}"


def rank_ranges(ids: list) -> str:
    """``[0, 1, 2, 5, 8, 9]`` -> ``0-2, 5, 8-9``."""
    spans: list = []
    for rank in sorted(set(ids)):
        if spans and rank == spans[-1][1] + 1:
            spans[-1][1] = rank
        else:
            spans.append([rank, rank])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in spans)


def _words(ids: list) -> str:
    return f"{'rank' if len(set(ids)) == 1 else 'ranks'} {rank_ranges(ids)}"


def failure_record(cause: dict | None, ranks: list) -> dict | None:
    """The report's failure record of the group's ``cause`` (see the module docstring); ``ranks``: the group's final ranks."""
    if not cause:
        failed = [r for r in ranks if r.get("state") == "failed"]
        if not failed:
            return None  # no cause and nothing failed: the job finished
        # the first to end in the controller's clock (each server records its own, and its offset beside it)
        first = sorted(failed, key=lambda r: (control.controller_time(r, "ended") or float("inf"), r["rank_id"]))[0]
        # a rank's own record: its state's ``stopped_by`` (None: nobody stopped it) is not a stop of the job's
        return dict(((k, v) for k, v in first.items() if k != "stopped_by"), tail=first.get("tail") or [])
    record = dict(cause)
    if "stopped_by" in record:
        record["ranks"] = sorted(r["rank_id"] for r in ranks if r.get("state") == "stopped")
        return record
    if "lost" in record or "missing" in record or int(record.get("rank_id", -1)) < 0:
        return record
    rank: dict = next((r for r in ranks if r.get("rank_id") == record.get("rank_id")), {})
    if record.get("device_id", -1) in (None, -1):
        record["device_id"] = rank.get("device_id", -1)
    record.setdefault("log", rank.get("log", "-"))
    record.setdefault("tail", rank.get("tail") or [])
    return record


def unconfirmed(failure: dict | None, ranks: list) -> list:
    """Ranks the group could not confirm ended (their server was lost before it said), beside the failure's own lost ranks."""
    own = set((failure or {}).get("lost") or [])
    return sorted(r["rank_id"] for r in ranks if r.get("state") not in FINAL_STATES and r["rank_id"] not in own)


def _stopped_words(left: list, ranks: list) -> str:
    """What the message may claim about the other ranks: only what the group confirmed."""
    if not left:
        return "every rank was stopped"
    servers = sorted({str(r.get("server") or r.get("host")) for r in ranks if r["rank_id"] in left})
    return f"{_words(left)} on {', '.join(servers)} could not be confirmed stopped (their server stopped answering)"


def _how_it_ended(failure: dict) -> str:
    rc, error = failure.get("rc"), failure.get("error")
    if rc is None:  # no exit code: the rank's command never started (_job_files.unstarted_line)
        return f"could not start: {error}" if error else "could not start"
    if isinstance(rc, int) and rc < 0:
        return str(error or signal_death(rc))
    return f"exit code {rc}{' - ' + error if error else ''}"


def others_words(failure: dict, ranks: list) -> str:
    """How the other ranks of a job without fail-fast ended (they were not stopped): ``fail-fast off, the other ranks ran
    to their end: 14 done, 1 failed (rank 7)``."""
    others = [r for r in ranks if r.get("rank_id") != failure.get("rank_id")]
    counts: dict = {}
    for rank in others:
        counts[str(rank.get("state"))] = counts.get(str(rank.get("state")), 0) + 1
    failed = [r["rank_id"] for r in others if r.get("state") == "failed"]
    ended = ", ".join(f"{counts[state]} {state}" for state in sorted(counts)) or "none"
    return f"fail-fast off, the other ranks ran to their end: {ended}" + (f" ({_words(failed)})" if failed else "")


def failure_message(failure: dict, left: list | None = None, ranks: list | None = None, fail_fast: bool = True) -> str:
    """The one message the watch fails with; ``left``: ranks not confirmed ended (:func:`unconfirmed`); ``fail_fast``: the
    job's (``_job_control.fail_fast``) - without it a failed rank stopped nobody, and the message says how the others ended."""
    left = left or []
    ranks = ranks or []
    stopped = _stopped_words(left, ranks)
    if not fail_fast and not left and "stopped_by" not in failure and "lost" not in failure:
        stopped = others_words(failure, ranks)
    if "stopped_by" in failure:
        count = len(failure.get("ranks") or [])
        return f"the job was stopped before its ranks finished: {failure['stopped_by']} ({count} ranks stopped; {stopped})"
    if "lost" in failure:
        lost = list(failure["lost"] or [])
        what = _words(lost) if lost else "its ranks"
        others = stopped.replace("every rank was stopped", "every other rank was stopped")
        if failure.get("since") is not None:
            when = time.strftime("%H:%M:%S", time.localtime(failure["since"]))
            return f"{failure.get('server')} stopped answering at {when}; {what} lost; {others}"
        return f"{failure.get('server')}: {what} lost - {failure.get('error')}; {others}"
    if failure.get("rank_id", -1) is None or int(failure.get("rank_id", -1)) < 0:
        return str(failure.get("error") or "the job failed")
    tail = "\n".join(f"    {line}" for line in failure.get("tail") or [])
    return (
        f"rank {failure['rank_id']} (server {failure.get('server')}, device {failure.get('device_id')}) failed first: "
        f"{_how_it_ended(failure)}; {stopped}. Its log {failure.get('log')} ends with:\n{tail}"
    )


def verdict(job_id: str, view: dict) -> dict[str, Any]:
    """The watch's result once the group has ended: ``ranks`` (every rank, with ``host`` and ``server``), ``fail_fast``
    (the job's, as its group shows it), and when the job did not finish ``failed``, ``first_failure``, ``msg``,
    ``lost_hosts`` (servers lost or never joined: the play leaves them alone) and ``unconfirmed`` (ranks the group could
    not confirm ended)."""
    ranks = sorted((dict(r) for r in view.get("ranks") or [] if isinstance(r, dict)), key=lambda r: int(r.get("rank_id", 0)))
    members = view.get("members") or {}
    # a member cut off with every other (the coordinator's fault: group.CUT_OFF) is not lost: no server is blamed
    lost_hosts = sorted(h for h, m in members.items() if isinstance(m, dict) and m.get("state") in ("lost", "missing"))
    fail_fast = control.fail_fast(view)
    result: dict[str, Any] = {
        "group": True,
        "job_id": job_id,
        "ranks": ranks,
        "lost_hosts": lost_hosts,
        "outcome": view.get("outcome"),
        "fail_fast": fail_fast,
    }
    failure = failure_record(view.get("cause"), ranks)
    if failure is None and ranks and all(r.get("state") == "done" for r in ranks):
        return dict(result, changed=False, msg=f"{len(ranks)} ranks finished")
    if failure is not None and "coordinator" in failure:  # the coordinator lost every member: it knows no end
        return dict(
            result,
            failed=True,
            changed=True,
            coordinator_lost=True,
            ranks=[],
            first_failure=failure,
            msg=f"{failure.get('error')}; each server's ranks follow, as it reports them",
        )
    if failure is None:
        failure = {"rank_id": -1, "error": "the job's group ended without every rank finishing, and nobody recorded why"}
    left = unconfirmed(failure, ranks)
    return dict(
        result,
        failed=True,
        changed=True,
        first_failure=failure,
        unconfirmed=left,
        msg=failure_message(failure, left, ranks, fail_fast),
    )


def unreachable(job_id: str, host: str, since: float | None, view: dict | None) -> dict[str, Any]:
    """The watch's result when the coordinator's server stopped answering the controller: nothing of the group is known
    since; every member stops its ranks when it loses the coordinator, but the watch cannot confirm it."""
    when = time.strftime("%H:%M:%S", time.localtime(since)) if since is not None else "?"
    error = (
        f"the job's coordinator on {host} stopped answering the controller at {when}; each server's supervisor stops its "
        f"ranks when it loses the coordinator, but the watch could not confirm it: check with ascend.cluster.status"
    )
    ranks = sorted((dict(r) for r in (view or {}).get("ranks") or [] if isinstance(r, dict)), key=lambda r: int(r.get("rank_id", 0)))
    return _without_coordinator(job_id, {"host": host, "server": host, "rank_id": -1, "error": error}, error, [host], ranks)


# rank states that say the rank was stopped (at the gate: aborted; running: stopped)
STOPPED_STATES = ("aborted", "stopped")


def stop_line(why: str, job_id: str, ranks: list, unconfirmed: list) -> str:
    """The one line for a job stopped from the controller (while it stages or runs): ``Ctrl-C on the controller: job J:
    16 rank(s) on 2 server(s) stopped, their devices are free``; ``ranks`` carry ``state`` and ``host``."""
    stopped = [r for r in ranks if r.get("state") in STOPPED_STATES]
    hosts = {r.get("host") for r in stopped}
    done = f"{len(stopped)} rank(s) on {len(hosts)} server(s) stopped" if stopped else "no rank was running"
    tail = f"; ranks {rank_ranges(unconfirmed)} could not be confirmed stopped" if unconfirmed else ", their devices are free"
    return f"{why}: job {job_id}: {done}{tail}"
