# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action training_job: run the module; the pre-flight reads the clock first; an interrupted staging wait or gate
releases the job's runners.

``state=preflight`` with ``clock_samples``: before the module runs, the server's clock is read over the
connection the task already holds (``plugin_utils._launch.clock.measure``, what ``clock_offset`` does), so one
pre-flight call per server measures the clock and runs every check on the server. A server whose offset is
refused runs no other check (with ``kill_stale`` nothing is stopped there); the role refuses the launch
naming every such server.

A Ctrl-C (or SIGTERM) to ansible-playbook while ``state=staged`` waits for the ranks to stage, or
while ``state=gate`` opens the gate, stops the job on the server at once (``state=stop``: the abort
file makes the runners at the gate give up and release their device locks) instead of leaving them
to the gate time-out; see ``plugin_utils/_launch/interrupt``. The gate of a named job is opened with one shell command
(``_job.files.gate_command``: the gate file and ``latest``, as the module writes them) instead of a module round trip.
Every other state runs the module as it is.
"""

from __future__ import annotations

from typing import Any, Callable

from ansible import constants as C
from ansible.module_utils.parsing.convert_bool import boolean

from ansible_collections.ascend.cluster.plugins.module_utils import _options as options
from ansible_collections.ascend.cluster.plugins.module_utils._job import files
from ansible_collections.ascend.cluster.plugins.plugin_utils._action import Action, Refusal
from ansible_collections.ascend.cluster.plugins.plugin_utils._launch import interrupt, staging
from ansible_collections.ascend.cluster.plugins.plugin_utils._launch.clock import measure_over

GUARDED_STATES = ("staged", "gate")
CLOCK_OPTIONS: dict[str, tuple[Callable[[Any], Any], Any]] = {
    "clock_samples": (int, 0),
    "clock_warn_above": (float, 1.0),
    "clock_refuse_above": (float, 30.0),
    "clock_allow": (boolean, False),
}


def clock_options(args: dict) -> dict:
    """Take the action's clock options out of ``args`` (the module never sees them), converted; ValueError on bad input."""
    taken = {}
    for name, (convert, default) in CLOCK_OPTIONS.items():
        value = args.pop(name, None)
        try:
            taken[name] = default if value is None else convert(value)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{name}: {value!r} is not a {type(default).__name__}") from exc
    return taken


def merged(result: dict, module_result: dict) -> dict:
    """``module_result`` over ``result``, keeping the warnings of both."""
    warnings = list(result.get("warnings") or []) + list(module_result.get("warnings") or [])
    result.update(module_result)
    if warnings:
        result["warnings"] = warnings
    return result


class ActionModule(Action):
    """Controller half of ``ascend.cluster.training_job``."""

    # the pre-flight's clock is read here (the module never sees these options)
    OWN = tuple(CLOCK_OPTIONS)
    # staged and gate: an operator's Ctrl-C releases the job's runners (plugin_utils/_launch/staging)
    GUARDED = True
    # the gate's and the job's failures are the job's, not the server the task runs on
    NAMES_SERVER = False

    def guarded(self, args: dict) -> bool:
        return args.get("state") in GUARDED_STATES and not self._task.check_mode

    def act(self, args: dict, own: dict, task_vars: dict) -> dict:
        if args.get("state") == "preflight":
            return self._preflight(args, own, task_vars)
        if not self.under_guard:
            return self._execute_module(module_args=args, task_vars=task_vars)
        try:
            return self._gate(args) if self._gate_by_shell(args) else self._execute_module(module_args=args, task_vars=task_vars)
        except interrupt.Interrupted as exc:
            return self._released(args, self.guard, exc.signum, task_vars)

    def _released(self, args: dict, guard: interrupt.Guard, signum: int, task_vars: dict) -> dict:
        """Interrupted while staged or at the gate: the gate task (run once, on the coordinator's server) releases the whole
        job through its group and says one line for it; a per-server staging wait releases its own server."""
        job_id = str(args.get("job_id"))
        local_tmp = str(C.DEFAULT_LOCAL_TMP)  # type: ignore[attr-defined]  # set at runtime: the run's own directory
        markers = staging.Markers(local_tmp, job_id)
        if args.get("state") == "gate" and args.get("group_wait") is not None:
            hosts = markers.begun() or [str(task_vars.get("inventory_hostname"))]  # the servers whose stage tasks ran
            opts = {"job_id": job_id, "job_root": args.get("job_root"), "grace": args.get("grace")}
            markers.hold(str(task_vars.get("inventory_hostname")))
            try:
                return staging.release_job(self, guard, signum, opts, task_vars, markers, hosts)
            finally:
                markers.let_go()
        return staging.release_server(self, guard, signum, job_id, args.get("job_root"), task_vars, args.get("grace"), markers)

    @staticmethod
    def _gate_by_shell(args: dict) -> bool:
        """The gate of a named job is opened with one shell command (``_job.files.gate_command``, or through the group
        ``_job.group.gate_wait_command``), not a module."""
        given = args.get("start_at") is not None or args.get("group_wait") is not None
        return args.get("state") == "gate" and args.get("job_id") not in (None, "latest") and given

    def _gate(self, args: dict) -> dict:
        """Open the gate (and move ``latest``) with one shell command: what the module does, without its round trip."""
        job_id, job_root = str(args["job_id"]), str(args.get("job_root") or options.DEFAULT_JOB_ROOT)
        if args.get("group_wait") is not None:
            return self._group_gate(job_id, job_root, args)
        try:
            start_at = float(args["start_at"])
        except (TypeError, ValueError):
            return {"failed": True, "msg": f"start_at: {args['start_at']!r} is not a time (epoch seconds)"}
        answer = self._low_level_execute_command(files.gate_command(job_root, job_id, start_at), sudoable=True)
        problem = files.parse_gate(str(answer.get("stdout") or ""))
        if problem is not None:
            return {
                "failed": True,
                "msg": f"cannot open the gate of job {job_id}: {problem} {str(answer.get('stderr') or '').strip()}".strip(),
            }
        return {"changed": True, "job_id": job_id, "start_at": start_at}

    def _group_gate(self, job_id: str, job_root: str, args: dict) -> dict:
        """Wait for the job's coordinator (on this task's server) to open the gate (``_launch.staging.open_gate``)."""
        try:
            wait = float(args["group_wait"])
        except (TypeError, ValueError):
            return {"failed": True, "msg": f"group_wait: {args.get('group_wait')!r} is not seconds"}
        return staging.open_gate(self, job_id, job_root, wait)

    def _preflight(self, args: dict, own: dict, task_vars: dict) -> dict:
        """The clock (when asked), then the module's checks unless the clock is refused."""
        result: dict = {}
        try:
            clock = clock_options(own)
        except ValueError as exc:
            raise Refusal(str(exc)) from exc
        if clock["clock_samples"] != 0:
            measured = measure_over(
                self, task_vars, clock["clock_samples"], clock["clock_warn_above"], clock["clock_refuse_above"], clock["clock_allow"]
            )
            if measured.get("failed"):
                return dict(result, failed=True, msg=measured["msg"], clock=measured)
            result["clock"] = measured
            if measured["status"] == "warn":
                result.setdefault("warnings", []).append(measured["msg"])
            if measured["status"] == "refuse":  # the role refuses the launch naming every such server; check nothing here
                return dict(result, changed=False, busy=[], msg=measured["msg"])
        return merged(result, self._execute_module(module_args=args, task_vars=task_vars))
