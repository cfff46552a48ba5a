# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action training_watch: watch one server's ranks until the job ends; fail fast cluster-wide.

Runs on the controller, one instance per server (the play's forks run them side by side).
Every ``full_poll_interval`` it calls ``ascend.cluster.training_job state=poll`` on the server
(which reads every local rank's state file and, when one has failed, stops the others there);
every ``poll_interval`` in between it only probes, with one cheap shell command, for the job's
abort file that a failing rank's runner writes at once (then polls fully right away). Then:

- a failed rank: write the job's controller-side marker ``<controller_dir>/<job_id>/failed``
  (first writer wins: that is the first failing rank) and fail naming it;
- the marker written by another server's watcher (noticed within 50 ms between polls): TERM
  the local ranks' process groups with one shell command, then ``state=stop`` (KILL after the
  grace time, wait for the runners), and fail naming the rank in the marker;
- every local rank done: succeed with the per-rank results.

The watcher that holds rank 0 prints progress (ranks running / done / failed cluster-wide, read
from the per-server summaries every watcher leaves beside the marker, and rank 0's last log line).
"""

from __future__ import annotations

import json
import os
import posixpath
import re
import time
from shlex import quote
from typing import Any

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase
from ansible.utils.display import Display

from ansible_collections.ascend.cluster.plugins.module_utils import _options as options

display = Display()
_FAILED_LINE = re.compile(r"^rank (\d+) failed \(rc=(-?\d+)\)")

MODULE = "ascend.cluster.training_job"
# The shared tool paths are accepted (module_defaults for group/ascend.cluster.ascend sets them on
# every module of the group) and not used: the watch runs no driver tool itself.
OPTIONS = {
    **{name: spec.get("default") for name, spec in options.TOOL_PATHS.items()},
    "job_id": None,
    "job_root": options.DEFAULT_JOB_ROOT,
    "controller_dir": None,
    "server": None,
    "poll_interval": 0.25,
    "full_poll_interval": 5.0,
    "progress_interval": 10.0,
    "grace": options.DEFAULT_GRACE,
    "tail_lines": 20,
}


def _write_json(path: str, data: Any) -> None:
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="utf-8") as handle:
        json.dump(data, handle)
    os.replace(tmp, path)


def _read_json(path: str) -> Any:
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return None


def claim_failure(marker: str, failure: dict) -> dict:
    """Write the failure marker unless one exists; the marker's content (ours or the earlier one)."""
    try:
        fd = os.open(marker, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        for _attempt in range(20):
            found = _read_json(marker)
            if found:
                return found
            time.sleep(0.05)
        return failure
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        json.dump(failure, handle)
    return failure


def failure_message(failure: dict) -> str:
    tail = "\n".join(f"    {line}" for line in failure.get("tail") or [])
    return (
        f"rank {failure['rank_id']} (server {failure['server']}, device {failure['device_id']}) failed first: "
        f"exit code {failure['rc']}{' - ' + failure['error'] if failure.get('error') else ''}; every rank was stopped. "
        f"Its log {failure['log']} ends with:\n{tail}"
    )


class ActionModule(ActionBase):
    """Watch the ranks of one server; see the module docstring."""

    TRANSFERS_FILES = False
    _requires_connection = True

    def _poll(self, args: dict, task_vars: dict) -> dict:
        return self._execute_module(module_name=MODULE, module_args=args, task_vars=task_vars)

    def _progress(self, hosts_dir: str, job_id: str) -> None:
        counts = {"staged": 0, "running": 0, "done": 0, "failed": 0, "stopped": 0, "pending": 0}
        rank0 = ""
        for name in sorted(os.listdir(hosts_dir)):
            summary = _read_json(os.path.join(hosts_dir, name)) or {}
            for rank in summary.get("ranks", []):
                counts[rank["state"]] = counts.get(rank["state"], 0) + 1
                if rank["rank_id"] == 0 and rank.get("tail"):
                    rank0 = rank["tail"][-1]
        shown = ", ".join(f"{k} {v}" for k, v in counts.items() if v)
        display.display(f"[{job_id}] {time.strftime('%H:%M:%S')} ranks: {shown} | rank 0: {rank0[-160:]}")

    def _shell(self, command: str) -> str:
        """One cheap shell command on the server (no module round trip); its stdout."""
        return self._low_level_execute_command(command, sudoable=True).get("stdout", "")

    def _probe(self, remote_job_dir: str, ranks: list) -> tuple[str | None, int]:
        """One shell command: the job's abort reason (None if none) and how many local ranks have exited."""
        abort = quote(posixpath.join(remote_job_dir, "abort"))
        states = " ".join(quote(posixpath.join(posixpath.dirname(r["log"]), "state.json")) for r in ranks)
        command = f"if test -e {abort}; then echo ABORT; head -n 1 {abort}; fi"
        if states:
            command += f"; echo EXITED $(grep -l '\"phase\": \"exited\"' {states} 2>/dev/null | wc -l)"
        lines = self._shell(command).splitlines()
        reason = lines[1] if len(lines) > 1 and lines[0] == "ABORT" else None
        exited = next((int(line.split()[1]) for line in lines if line.startswith("EXITED ")), 0)
        return reason, exited

    def _fast_stop(self, remote_job_dir: str, ranks: list) -> None:
        """Abort the gate and TERM every running rank's process group with one shell command."""
        groups = " ".join(f"-{int(r['pid'])}" for r in ranks if r.get("pid") and r["state"] in ("running", "staged"))
        abort = quote(posixpath.join(remote_job_dir, "abort"))
        command = f"echo 'another server failed' >> {abort}"
        if groups:
            command += f"; kill -TERM {groups} 2>/dev/null"  # no "--": dash's kill refuses it
        self._shell(command + "; true")

    @staticmethod
    def _early_claim(marker: str, server: str, reason: str, ranks: list) -> None:
        """Claim the failure marker from the runner's abort line alone, so other servers stop now.

        The full poll that follows rewrites it with the log tail (this watcher owns it then).
        """
        found = _FAILED_LINE.match(reason)
        if not found:
            return
        rank_id, rc = int(found.group(1)), int(found.group(2))
        device = next((r["device_id"] for r in ranks if r["rank_id"] == rank_id), -1)
        log = next((r["log"] for r in ranks if r["rank_id"] == rank_id), "-")
        claim_failure(marker, {"server": server, "rank_id": rank_id, "device_id": device, "rc": rc, "log": log, "tail": [], "early": True})

    def run(self, tmp: Any = None, task_vars: dict | None = None) -> dict:
        task_vars = task_vars or {}
        result = super().run(tmp, task_vars)
        opts: dict[str, Any] = dict(OPTIONS)
        unknown = set(self._task.args) - set(opts)
        if unknown:
            raise AnsibleActionFail(f"unknown options: {', '.join(sorted(unknown))}")
        opts.update(self._task.args)
        if not opts["job_id"] or not opts["controller_dir"]:
            raise AnsibleActionFail("job_id and controller_dir are required")
        server: str = opts["server"] or task_vars["inventory_hostname"]
        job_dir = os.path.join(os.path.expanduser(opts["controller_dir"]), opts["job_id"])
        remote_job_dir = posixpath.join(opts["job_root"], opts["job_id"])
        hosts_dir = os.path.join(job_dir, "hosts")
        os.makedirs(hosts_dir, exist_ok=True)
        marker = os.path.join(job_dir, "failed")
        poll_args = {
            "state": "poll",
            "job_id": opts["job_id"],
            "job_root": opts["job_root"],
            "grace": opts["grace"],
            "tail_lines": 1,
            "tail_failed": opts["tail_lines"],
            "stop_on_failure": True,
        }
        last_progress = 0.0
        next_full = 0.0
        ranks: list = []
        while True:
            if time.time() >= next_full:
                next_full = time.time() + float(opts["full_poll_interval"])
                polled = self._poll(poll_args, task_vars)
                if polled.get("failed"):
                    failure: dict[str, Any] = {
                        "server": server,
                        "rank_id": -1,
                        "device_id": -1,
                        "rc": None,
                        "log": "-",
                        "error": f"cannot poll the server: {polled.get('msg')}",
                        "tail": [],
                    }
                    claim_failure(marker, failure)
                    return dict(result, failed=True, msg=failure["error"])
                ranks = polled["ranks"]
                if any(r["state"] in ("pending", "staged") for r in ranks):
                    next_full = time.time() + 1.0  # before the start time: look again soon
                _write_json(os.path.join(hosts_dir, f"{server}.json"), {"server": server, "ranks": ranks})
                if any(r["rank_id"] == 0 for r in ranks) and time.time() - last_progress >= float(opts["progress_interval"]):
                    last_progress = time.time()
                    self._progress(hosts_dir, opts["job_id"])
                own = polled.get("failed_rank")
                if own:
                    first = claim_failure(marker, dict(own, server=server))
                    if first.get("early") and first.get("server") == server:
                        first = dict(own, server=server)
                        _write_json(marker, first)
                    return self._finish(result, server, ranks, first)
                if all(r["state"] in ("done", "failed", "stopped") for r in ranks):
                    return dict(result, changed=False, server=server, ranks=ranks, msg=f"{len(ranks)} ranks on {server} finished")
            if os.path.exists(marker):
                self._fast_stop(remote_job_dir, ranks)
                first = _read_json(marker) or {}
                stopped = self._poll(
                    {
                        "state": "stop",
                        "job_id": opts["job_id"],
                        "job_root": opts["job_root"],
                        "grace": opts["grace"],
                        "reason": "another server's rank failed",
                    },
                    task_vars,
                )
                return self._finish(result, server, stopped.get("ranks", ranks), first)
            self._sleep_unless(marker, float(opts["poll_interval"]))
            if os.path.exists(marker):
                continue
            reason, exited = self._probe(remote_job_dir, ranks)
            if reason:  # a rank failed here: tell the other servers now, read the details next
                self._early_claim(marker, server, reason, ranks)
                next_full = 0.0
            elif ranks and exited >= len(ranks):
                next_full = 0.0

    @staticmethod
    def _sleep_unless(marker: str, seconds: float) -> None:
        """Sleep between polls, waking up at once when another server's watcher marks a failure."""
        deadline = time.time() + seconds
        while time.time() < deadline and not os.path.exists(marker):
            time.sleep(0.05)

    @staticmethod
    def _finish(result: dict, server: str, ranks: list, first: dict) -> dict:
        msg = failure_message(first) if first.get("rank_id", -1) >= 0 else first.get("error", "the job failed")
        return dict(result, failed=True, changed=True, server=server, ranks=ranks, first_failure=first, msg=msg)
