# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The launch's staging, as the controller's workers see it: who holds it open, and one release for the job on Ctrl-C.

Ansible runs the stage task of each server in a worker of its own, at most ``forks`` at a time, and a
Ctrl-C reaches only the workers alive at that moment (``plugin_utils/_launch/interrupt``). So that one is alive
at every moment between the first rank staged and the gate opening, whatever ``forks``, the stage task
of the job's coordinator host - rank 0's server, the first to stage when it comes first in the play - is
the **anchor**: after its own server has staged it stays until every other server's stage task has
ended and then until the job's group has opened the gate (or refused to), doing the gate task's work
(:func:`open_gate`). The other servers' stage tasks end as soon as their own ranks are staged, so
they take only ``forks - 1`` workers and the launch never waits on a worker held for another server.
With ``forks=1`` there is no anchor (it would hold the only worker).

The workers of one run share its local temporary directory (Ansible's ``DEFAULT_LOCAL_TMP``, made by
the main process before it forks them). Each stage task leaves markers in the job's directory there:

- ``started-<host>`` when it begins, ``arrived-<host>`` (``ok`` / ``failed``) when its own part ended;
- ``released-<host>`` (JSON) when a Ctrl-C made it release its own server;
- ``anchor`` while the anchor waits (a worker that sees it leaves the telling to the anchor).

On a Ctrl-C (or SIGTERM) every live stage worker stops the job on its own server at once
(``training_job state=stop``: the abort file, which that server's supervisor also passes to the job's
group). The anchor then stops the job through its group - its server holds the coordinator, which
tells every member that joined - and waits until each server that began staging is accounted for:
its member reported its ranks ended, or its own worker released it, and says **one line for the
job** (``_launch.watch.stop_line``, the same as a Ctrl-C while the job runs). Without a live anchor each worker
says its own server's line.
"""

from __future__ import annotations

import json
import math
import os
import re
import signal
import time
from typing import Any

from ansible_collections.ascend.cluster.plugins.module_utils import _options as options
from ansible_collections.ascend.cluster.plugins.module_utils._job import files, group
from ansible_collections.ascend.cluster.plugins.plugin_utils._launch import interrupt, watch

JOB_MODULE = "ascend.cluster.training_job"
READ_EVERY_S = 0.1  # the anchor's look at the group's view while it waits for every server's release
CONFIRM_SLACK_S = 3.0  # beyond the kill grace and the group's loss time, for a release to be confirmed
ARRIVE_SLACK_S = 30.0  # per batch of stage tasks, beyond the stage time-out, before the anchor stops waiting


def uses_anchor(hosts: list, forks: int | None) -> bool:
    """An anchor can wait for the others only when there are others and a worker is left for them."""
    return len(hosts) > 1 and forks is not None and forks >= 2


def arrive_timeout(hosts: list, forks: int | None, stage_timeout: float) -> float:
    """How long the anchor waits for every other stage task: each may take ``stage_timeout``, ``forks - 1`` at a time."""
    workers = max(1, (forks or 2) - 1)
    return math.ceil(max(1, len(hosts) - 1) / workers) * (stage_timeout + ARRIVE_SLACK_S)


class Markers:
    """The job's marker files in the run's local temporary directory (see the module's docstring)."""

    def __init__(self, local_tmp: str, job_id: str) -> None:
        self.directory = os.path.join(local_tmp, "ascend-staging-" + _safe(job_id))

    def _path(self, kind: str, host: str = "") -> str:
        return os.path.join(self.directory, f"{kind}-{_safe(host)}" if host else kind)

    def _write(self, kind: str, host: str, text: str) -> None:
        os.makedirs(self.directory, mode=0o700, exist_ok=True)
        path = self._path(kind, host)
        temporary = f"{path}.{os.getpid()}.tmp"
        with open(temporary, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(temporary, path)  # a reader sees the whole marker or none

    def _read(self, kind: str, host: str = "") -> str | None:
        return self._read_file(os.path.basename(self._path(kind, host)))

    def start(self, host: str) -> None:
        self._write("started", host, host)

    def begun(self) -> list:
        """The hosts whose stage task began, in name order."""
        try:
            names = sorted(name for name in os.listdir(self.directory) if name.startswith("started-") and not name.endswith(".tmp"))
        except OSError:
            return []
        return [text for text in (self._read_file(name) for name in names) if text]

    def _read_file(self, name: str) -> str | None:
        try:
            with open(os.path.join(self.directory, name), encoding="utf-8") as handle:
                return handle.read()
        except OSError:
            return None

    def started(self, host: str) -> bool:
        return self._read("started", host) is not None

    def arrive(self, host: str, ok: bool) -> None:
        self._write("arrived", host, "ok" if ok else "failed")

    def arrivals(self, hosts: list) -> dict:
        """``{host: True (ok) / False (failed)}`` for the hosts whose stage task has ended."""
        found = {}
        for host in hosts:
            text = self._read("arrived", host)
            if text is not None:
                found[host] = text == "ok"
        return found

    def release(self, host: str, result: dict) -> None:
        self._write("released", host, json.dumps(result))

    def released(self, host: str) -> dict | None:
        text = self._read("released", host)
        try:
            data = json.loads(text) if text else None
        except ValueError:
            return None
        return data if isinstance(data, dict) else None

    def hold(self, host: str) -> None:
        self._write("anchor", "", host)

    def let_go(self) -> None:
        try:
            os.unlink(self._path("anchor"))
        except OSError:
            pass

    def anchored(self) -> bool:
        return self._read("anchor") is not None

    def wait_arrivals(self, hosts: list, timeout: float, interval: float = 0.1) -> dict:
        """Wait until every host arrived, or one failed, or ``timeout`` s; the arrivals then."""
        deadline = time.monotonic() + timeout
        while True:
            found = self.arrivals(hosts)
            if len(found) == len(hosts) or not all(found.values()) or time.monotonic() >= deadline:
                return found
            time.sleep(interval)


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name) or "_"


def stop_server(action: Any, signum: int, job_id: str, job_root: Any, task_vars: dict, grace: Any = None) -> dict:
    """Stop the job on this task's server at once (``training_job state=stop``): its abort file makes the runners at the
    gate - and any a start under way forks later - give up and free their devices, and its supervisor passes the stop on
    to the job's group. The server's line and the module's result."""
    why = interrupt.cause(signum)
    server = task_vars.get("inventory_hostname", "?")
    args = {"state": "stop", "job_id": job_id, "reason": f"{why} during the launch (ansible-playbook of {interrupt.controller_user()})"}
    for key, value in (("job_root", job_root), ("grace", grace)):
        if value is not None:
            args[key] = value
    stopped = action._execute_module(module_name=JOB_MODULE, module_args=args, task_vars=task_vars)
    if stopped.get("failed"):
        msg = f"{why} during the launch: could not release job {job_id} on {server}: {stopped.get('msg')}"
    else:
        count = len(stopped.get("stopped") or [])
        msg = f"{why} during the launch: job {job_id} released on {server} (nothing started; {count} staged ranks stopped, devices free)"
    return {"msg": msg, "module": stopped}


def release_server(
    action: Any, guard: interrupt.Guard, signum: int, job_id: str, job_root: Any, task_vars: dict, grace: Any, markers: Markers | None
) -> dict:
    """A stage task that is not the anchor, interrupted: stop the job on its own server, leave the result for the anchor,
    and say the server's line only when no anchor will say the job's."""
    host = str(task_vars.get("inventory_hostname"))
    anchored = markers is not None and markers.anchored()  # looked at now: the anchor lets go once it has said the job's line
    done = stop_server(action, signum, job_id, job_root, task_vars, grace)
    module = done["module"]
    ranks = [{"rank_id": r, "host": host, "state": "aborted"} for r in module.get("stopped") or []]
    if markers is not None:
        markers.release(host, {"failed": bool(module.get("failed")), "ranks": ranks, "msg": done["msg"]})
    if signum == signal.SIGINT and not anchored:  # the main process reads no more results: tell the operator directly
        guard.say(f"[{job_id}] {done['msg']}")
    return {
        "failed": True,
        "changed": bool(module.get("changed")),
        "msg": done["msg"],
        "interrupted": {"signal": signum, "action": "released"},
    }


def release_job(
    action: Any,
    guard: interrupt.Guard,
    signum: int,
    opts: dict,
    task_vars: dict,
    markers: Markers,
    hosts: list,
) -> dict:
    """The anchor (or the gate task), interrupted: stop the job on the coordinator's server - through its group, every
    member that joined stops too - then account for every server that began staging (its member's ranks ended, or its own
    worker released it) and say one line for the job.

    ``opts``: ``job_id``, ``job_root``, ``grace``, ``lost_after``. ``hosts``: the servers that start ranks.
    """
    job_id = str(opts["job_id"])
    why = interrupt.cause(signum)
    own = str(task_vars.get("inventory_hostname"))
    first = stop_server(action, signum, job_id, opts.get("job_root"), task_vars, opts.get("grace"))
    job_dir = files.job_dir(str(opts.get("job_root") or options.DEFAULT_JOB_ROOT), job_id)
    deadline = time.monotonic() + float(opts.get("grace") or 0) + float(opts.get("lost_after") or group.LOST_AFTER_S) + CONFIRM_SLACK_S
    while True:
        view = _read_view(action, job_dir)
        ranks, pending = account(view, markers, hosts, own, first["module"])
        if not pending or time.monotonic() >= deadline:
            break
        time.sleep(READ_EVERY_S)
    unconfirmed = sorted({r["rank_id"] for r in ranks if r.get("state") not in watch.STOPPED_STATES and isinstance(r.get("rank_id"), int)})
    if pending:
        msg = f"{why}: job {job_id}: the stop was sent to its group; not confirmed within the wait on {', '.join(pending)}: check with ascend.cluster.status"
    else:
        msg = watch.stop_line(why, job_id, ranks, unconfirmed)
    guard.say(f"[{job_id}] {msg}")
    markers.let_go()
    stopped = [r["rank_id"] for r in ranks if r.get("state") in watch.STOPPED_STATES]
    interrupted = {"signal": signum, "action": "released", "stopped": stopped}
    return {"failed": True, "changed": True, "msg": msg, "interrupted": interrupted, "ranks": ranks}


def _read_view(action: Any, job_dir: str) -> dict | None:
    answer = action._low_level_execute_command(files.read_command(job_dir), sudoable=True)
    ran, text = files.parse_read(str(answer.get("stdout") or ""))
    return watch.parse_group(text) if ran and text else None


def account(view: dict | None, markers: Markers, hosts: list, own: str, own_stop: dict) -> tuple:
    """``(ranks, pending)`` after a stop while the job stages: every rank known to have ended (``state``, ``host``), and
    the servers not accounted for yet. A server is accounted for when its member reported its ranks ended, its own worker
    released it (``released-<host>``), or its stage task never began (nothing of the job is there)."""
    members = (view or {}).get("members") or {}
    final: dict = {}  # the job ended: every rank's last state is in its list
    for rank in (view or {}).get("ranks") or [] if watch.ended(view) else []:
        if isinstance(rank, dict):
            final.setdefault(rank.get("host"), []).append(
                {"rank_id": rank.get("rank_id"), "host": rank.get("host"), "state": rank.get("state")}
            )
    ranks: list = []
    pending: list = []
    for host in hosts:
        member = members.get(host) if isinstance(members.get(host), dict) else None
        released = markers.released(host)
        if host in final:
            ranks.extend(final[host])
        elif member is not None and member.get("state") == "done":
            ranks.extend(
                {"rank_id": int(rank), "host": host, "state": state} for rank, state in sorted((member.get("rank_states") or {}).items())
            )
        elif released is not None:
            ranks.extend(r for r in released.get("ranks") or [] if isinstance(r, dict))
        elif host == own and (view is None or member is None):  # no group (yet) on this server: its own stop says it
            ranks.extend({"rank_id": r, "host": host, "state": "aborted"} for r in own_stop.get("stopped") or [])
        elif markers.started(host) or (member is not None and member.get("state") in ("joined", "lost")):
            pending.append(host)
    return ranks, pending


def open_gate(action: Any, job_id: str, job_root: str, wait: float) -> dict:
    """Wait for the job's coordinator (on this task's server) to open the gate: one shell command; when it is still shut
    after ``wait`` s, a second one stops the job there (the group releases every staged rank), naming what kept it shut."""
    job_dir = files.job_dir(job_root, job_id)
    answer = action._low_level_execute_command(group.gate_wait_command(job_dir, wait), sudoable=True)
    ran, text = files.parse_read(str(answer.get("stdout") or ""))
    if not ran:
        why = " ".join(str(answer.get(k) or "").strip() for k in ("stdout", "stderr")).strip() or "no answer"
        return {"failed": True, "msg": f"cannot open the gate of job {job_id} through its group: {why}"}
    found = dict(group.gate_answer(watch.parse_group(text) if text else None, wait), job_id=job_id)
    if found.get("failed") and (found.get("group") or {}).get("status") == group.FORMING:
        action._low_level_execute_command(files.abort_command(job_dir, str(found["msg"])), sudoable=True)
    return found
