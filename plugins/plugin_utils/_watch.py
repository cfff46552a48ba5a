# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The decisions of the training watch (``ascend.cluster.training_watch``), as one pure function.

The action plugin observes - a full poll of the server's ranks, a cheap probe of its job files,
the controller-side failure marker another server's watcher may have written - and :func:`step`
says what to do about it; the plugin then does it (claims the marker, stops ranks, returns).
Nothing here reads a file, calls a module or looks at the clock.

A *failure* is the record the watchers share through the marker, one of three kinds:

- a rank failed: ``{"server", "rank_id", "device_id", "rc", "log", "tail", "error"}``
  (``"early": True`` while only the runner's abort line is known);
- the job was stopped from outside: ``{"server", "rank_id": -1, "stopped_by", "ranks"}``;
- a server could not be watched: ``{"server", "rank_id": -1, "error"}``;
- a server's ranks were lost: ``{"server", "rank_id": -1, "lost": [rank ids], "since", "error"}`` -
  the server stopped answering at ``since`` (two probes in a row missed, see :func:`count_miss`),
  or (``since`` None) their runners died without recording an exit (``error`` says how).
"""

from __future__ import annotations

import time
from typing import Any, NamedTuple

from ansible_collections.ascend.cluster.plugins.module_utils import _job_control as control
from ansible_collections.ascend.cluster.plugins.module_utils import _job_files as files
from ansible_collections.ascend.cluster.plugins.module_utils._job_procs import signal_death

# What step() decides
WAIT = "wait"  # nothing to do: probe again after poll_interval (Decision.soon: poll fully within 1 s)
POLL_NOW = "poll_now"  # poll every rank now (the probe saw them all end)
CLAIM_EARLY = "claim_early"  # a local rank's runner reported a failure: claim the marker now, then poll
FAIL = "fail"  # claim the marker with Decision.failure and fail (the first claim names the job's failure)
FOLLOW = "follow"  # another server's watcher claimed the marker: stop the local ranks and fail with it
SUCCEED = "succeed"  # every local rank exited 0

WAITING_STATES = ("pending", "staged")
FINAL_STATES = ("done", "failed", "stopped")
LOST_AFTER = 2  # probes missed in a row that make a server lost (one lost packet is not a dead host)


class Misses(NamedTuple):
    """Probes of a server missed in a row (no answer in time, no sentinel, a connection failure) and when the first was sent."""

    in_a_row: int = 0
    since: float | None = None


def count_miss(misses: Misses, answered: bool, sent_at: float) -> Misses:
    """The misses after a probe sent at ``sent_at`` was ``answered`` or not: an answer starts over."""
    if answered:
        return Misses()
    return Misses(misses.in_a_row + 1, misses.since if misses.in_a_row else sent_at)


class Seen(NamedTuple):
    """What the watcher of ``server`` has seen since its last decision."""

    server: str
    ranks: list  # the local ranks of the last full poll ([] before the first)
    polled: dict | None = None  # a full poll's result (training_job state=poll), when one was made
    probe: dict | None = None  # a probe's result (_job_files.parse_probe), when one was made
    marker: dict | None = None  # the controller-side marker, when it exists
    misses: Misses = Misses()  # probes (or full polls) missed in a row, this one included


class Decision(NamedTuple):
    action: str
    failure: dict | None = None
    soon: bool = False


def step(seen: Seen) -> Decision:
    """What the watcher does next about ``seen``; see the module docstring and the constants."""
    polled = seen.polled
    if polled is not None:
        if polled.get("failed"):
            return Decision(FAIL, {"server": seen.server, "rank_id": -1, "error": f"cannot poll the server: {polled.get('msg')}"})
        if polled.get("failed_rank"):
            lost = [r for r in polled["ranks"] if r["state"] == "failed" and r.get("phase") in control.LOST_PHASES]
            if polled["failed_rank"].get("phase") in control.LOST_PHASES:  # only lost ranks failed: name them all
                return Decision(FAIL, lost_failure(seen.server, [r["rank_id"] for r in lost], None, polled["failed_rank"]["error"]))
            return Decision(FAIL, dict(polled["failed_rank"], server=seen.server))
        if all(r["state"] == "done" for r in polled["ranks"]):
            return Decision(SUCCEED)
    if seen.marker is not None:
        return Decision(FOLLOW, seen.marker)
    if seen.misses.in_a_row >= LOST_AFTER:
        lost = [r["rank_id"] for r in seen.ranks if r["state"] not in FINAL_STATES]
        return Decision(FAIL, lost_failure(seen.server, lost, seen.misses.since, "stopped answering"))
    if polled is not None:
        ranks = polled["ranks"]
        if all(r["state"] in FINAL_STATES for r in ranks):
            return Decision(FAIL, stopped_failure(seen.server, polled.get("abort"), ranks))
        return Decision(WAIT, soon=waiting(ranks))
    probe = seen.probe
    if probe is not None:
        if probe["abort"]:
            found = files.parse_abort_line(probe["abort"])
            if found["rank_id"] is not None:
                return Decision(CLAIM_EARLY, early_failure(seen.server, found, seen.ranks))
        if probe.get("gone") or (seen.ranks and probe["final"] >= len(seen.ranks)):
            return Decision(POLL_NOW)  # ranks ended, or lost their runner: the full poll says how
    return Decision(WAIT)


def waiting(ranks: list) -> bool:
    """Some rank still waits to start (pending, or staged at the gate): poll fully again soon, for the pids its start
    brings (the fast stop of a follower TERMs them)."""
    return any(r.get("state") in WAITING_STATES for r in ranks)


def early_failure(server: str, found: dict, ranks: list) -> dict:
    """The failure record of a rank known only from its abort line (``parse_abort_line``)."""
    rank: dict = next((r for r in ranks if r["rank_id"] == found["rank_id"]), {})
    return {
        "server": server,
        "rank_id": found["rank_id"],
        "device_id": rank.get("device_id", -1),
        "rc": found["rc"],
        "error": found["why"],
        "log": rank.get("log", "-"),
        "tail": [],
        "early": True,
    }


def lost_failure(server: str, ranks: list, since: float | None, error: str | None) -> dict:
    """The record of a server's ranks lost: it stopped answering at ``since``, or (None) their runners died."""
    return {"server": server, "rank_id": -1, "lost": sorted(ranks), "since": since, "error": error}


def stopped_failure(server: str, reason: str | None, ranks: list) -> dict:
    """The record of local ranks that ended without finishing, stopped by ``reason`` (the abort line)."""
    return {
        "server": server,
        "rank_id": -1,
        "stopped_by": reason or "nobody recorded why (no abort file)",
        "ranks": [r["rank_id"] for r in ranks if r["state"] != "done"],
    }


def rank_ranges(ids: list) -> str:
    """``[0, 1, 2, 5, 8, 9]`` -> ``0-2, 5, 8-9``."""
    spans: list = []
    for rank in sorted(set(ids)):
        if spans and rank == spans[-1][1] + 1:
            spans[-1][1] = rank
        else:
            spans.append([rank, rank])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in spans)


def _how_it_ended(failure: dict) -> str:
    rc, error = failure.get("rc"), failure.get("error")
    if isinstance(rc, int) and rc < 0:
        return str(error or signal_death(rc))
    return f"exit code {rc}{' - ' + error if error else ''}"


def failure_message(failure: dict) -> str:
    """The one message every watcher of the job fails with."""
    if "stopped_by" in failure:
        return (
            f"the job was stopped before its ranks finished: {failure['stopped_by']} "
            f"(ranks {rank_ranges(failure.get('ranks') or [])} on server {failure['server']} stopped; every rank was stopped)"
        )
    if "lost" in failure:
        lost = set(failure["lost"] or [])
        ranks = f"{'rank' if len(lost) == 1 else 'ranks'} {rank_ranges(list(lost))}" if lost else "its ranks"
        if failure.get("since") is not None:
            when = time.strftime("%H:%M:%S", time.localtime(failure["since"]))
            return f"{failure['server']} stopped answering at {when}; {ranks} lost; every other rank was stopped"
        return f"{failure['server']}: {ranks} lost - {failure.get('error')}; every other rank was stopped"
    if failure.get("rank_id", -1) < 0:
        return str(failure.get("error") or "the job failed")
    tail = "\n".join(f"    {line}" for line in failure.get("tail") or [])
    return (
        f"rank {failure['rank_id']} (server {failure['server']}, device {failure['device_id']}) failed first: "
        f"{_how_it_ended(failure)}; every rank was stopped. Its log {failure['log']} ends with:\n{tail}"
    )


def supersedes(claimed: dict[str, Any], server: str) -> bool:
    """True when the marker holds this server's early claim, which its full failure record replaces."""
    return bool(claimed.get("early")) and claimed.get("server") == server
