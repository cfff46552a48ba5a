# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the controller and the launch read of a group: the gate's wait (a shell line and its answer), and the
coordinator's liveness from group.json.

Runs on target hosts: Python 3.8+, stdlib only.
"""

from __future__ import annotations

import os
import posixpath
import time
from shlex import quote

from ansible_collections.ascend.cluster.plugins.module_utils._job import files
from ansible_collections.ascend.cluster.plugins.module_utils._job.group.protocol import (
    CRASHED,
    ENDED,
    FORMING,
    LOST_AFTER_S,
    RUNNING,
    STOPPING,
)
from ansible_collections.ascend.cluster.plugins.module_utils._job.procs import pid_alive

GATE_WAIT_S = 0.05  # the gate request's shell loop: between looks at group.json


def gate_wait_command(job_dir: str, wait: float) -> str:
    """One POSIX shell command that waits up to ``wait`` seconds for the coordinator on this server to open the gate (or
    stop the job before it) and prints its ``group.json`` (``_job.files.parse_read``); refuses a job not recorded in
    ``job_dir``."""
    group_file = posixpath.join(job_dir, files.GROUP_FILE)
    rounds = max(1, int(wait / GATE_WAIT_S))
    answered = "|".join('"status": "%s"' % s for s in (RUNNING, STOPPING, ENDED, CRASHED))
    return (
        "test -f %s || { echo %s; exit 3; }; "
        % (quote(posixpath.join(job_dir, files.JOB_FILE)), quote("no job recorded in %s on this host" % job_dir))
        + "N=0; while [ $N -lt %d ] && ! grep -qE %s %s 2>/dev/null; do sleep %s; N=$((N+1)); done; "
        % (rounds, quote(answered), quote(group_file), GATE_WAIT_S)
        + files.read_command(job_dir)
    )


def wait_gate(job_dir: str, wait: float) -> dict | None:
    """What :func:`gate_wait_command` does, in Python (the module's way): the coordinator's view once the gate opened or
    the job was stopped, or as it is after ``wait`` seconds."""
    deadline = time.time() + wait
    while True:
        view = files.read_json(os.path.join(job_dir, files.GROUP_FILE))
        if (isinstance(view, dict) and view.get("status") in (RUNNING, STOPPING, ENDED, CRASHED)) or time.time() > deadline:
            return view if isinstance(view, dict) else None
        time.sleep(GATE_WAIT_S)


def not_started(view: dict) -> list:
    """``host: what it lacks`` for every member that keeps the gate shut: not joined, or ranks not staged yet."""
    found = []
    for host, member in sorted((view.get("members") or {}).items()):
        if not isinstance(member, dict):
            continue
        if member.get("state") != "joined":
            found.append("%s (not joined: %s)" % (host, member.get("state")))
        elif member.get("unstaged"):
            found.append("%s (ranks not staged: %s)" % (host, ", ".join(str(r) for r in member["unstaged"])))
    return found


def gate_answer(view: dict | None, wait: float) -> dict:
    """The gate's result from the coordinator's view: ``start_at`` (the controller's clock) once the gate opened, else
    ``failed`` with the reason - the stop that came first, or (``missing``) the servers that kept it shut ``wait`` s."""
    if not isinstance(view, dict):
        return {"failed": True, "msg": "the job's coordinator wrote no group view (%s): its supervisor did not start?" % files.GROUP_FILE}
    if view.get("gate_at") is not None:
        return {"changed": True, "start_at": float(view["gate_at"]), "group": view}
    cause = view.get("cause") or {}
    if view.get("status") == FORMING:
        missing = not_started(view)
        why = "; ".join(missing) if missing else "no answer"
        msg = "the job's group at %s did not open the gate within %g s: %s" % (view.get("endpoint"), wait, why)
        hosts = sorted(h.split(" ", 1)[0] for h in missing)
        return {"failed": True, "msg": msg, "missing": hosts, "group": view}
    msg = str(cause.get("error") or view.get("stop_reason") or "the job was stopped before its gate opened")
    return {"failed": True, "msg": msg, "missing": cause.get("missing") or [], "group": view}


def _clock(when: object) -> str:
    if isinstance(when, (int, float)) and not isinstance(when, bool):
        return time.strftime("%H:%M:%S", time.localtime(float(when)))
    return "?"


def health(job_dir: str, now: float | None = None) -> dict:
    """What this server's files say of the job's group (``status`` and ``diagnose``): ``{"coordinator": group.json's
    status here (on the coordinator's server) or None, "member": this server's member's state or None, "problem": one
    sentence naming the coordinator's crash or loss, or None}``. Read only; the times are this server's clock."""
    now = time.time() if now is None else now
    view = files.read_json(os.path.join(job_dir, files.GROUP_FILE))
    member = files.read_json(os.path.join(job_dir, files.MEMBER_FILE))
    view = view if isinstance(view, dict) else None
    member = member if isinstance(member, dict) else None
    problem = None
    if view is not None:
        status, cause = view.get("status"), view.get("cause")
        lost_after = float(view.get("lost_after") or LOST_AFTER_S)
        updated = view.get("updated")
        if status == CRASHED:
            problem = "the job's coordinator at %s crashed at %s: %s (its log: %s)" % (
                view.get("endpoint"),
                _clock(view.get("crashed_at")),
                view.get("error"),
                view.get("log"),
            )
        elif isinstance(cause, dict) and "coordinator" in cause:
            problem = str(cause.get("error"))
        elif status != ENDED and isinstance(updated, (int, float)) and now - updated > lost_after + 1:
            pid = view.get("pid")
            alive = isinstance(pid, int) and pid_alive(pid)
            problem = "the job's coordinator at %s has not rewritten its group.json since %s (%.0f s ago; its process %s %s)" % (
                view.get("endpoint"),
                _clock(updated),
                now - updated,
                pid,
                "still runs: stalled?" if alive else "is gone",
            )
    if problem is None and member is not None and member.get("state") == "lost":
        problem = "%s (at %s)" % (member.get("error") or "lost the job's coordinator", _clock(member.get("updated")))
    return {
        "coordinator": view.get("status") if view is not None else None,
        "member": member.get("state") if member is not None else None,
        "problem": problem,
    }
