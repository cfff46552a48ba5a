# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action training_ranks: record the job, start this server's ranks and wait until they are staged, in one task.

What the training_rank action does (split the command, refuse AOE conflicts, on the controller), and
reduce each rank to the ids the module takes. In a launcher mode (``launcher=torchrun|msrun``) it also
refuses, before anything starts, a server whose ranks the launcher would number otherwise than the rank
table (``_job_launcher.check_layout``).

The launch role folds three steps of each server into this one task, each a module call over the
connection the task holds:

1. ``record`` (with ``job_root``): ``training_job state=record`` - with ``rank_table`` the table is
   written to ``rank_table_path`` (unless ``write_rank_table`` is false), read back and compared, and the
   job is recorded only when the file is the job's table;
2. the module itself, async (``async`` + ``poll: 0`` are passed through): the supervisor starts the runners;
3. ``stage_timeout`` > 0: ``training_job state=staged`` waits until every local rank is staged at the gate;
   its ranks are returned as ``staged``, and a rank that could not stage fails the task.

With ``detach`` (the launch role's way) the module does all three itself, in one call over the connection: the
supervisor is started as a daemon (no async wrapper), and ``record``, ``rank_table``, ``write_rank_table`` and
``stage_timeout`` are passed on to it. That call is sent as ``training_job state=stage`` (the same code,
``module_utils/_job_stage``): the pre-flight has just run ``training_job`` on the server, and one module payload built
for both saves the launch about 0.25 s of controller CPU on its critical path.

The role passes the host's slice of the rank layout as it is (entries also carry ``device_ip``,
``server_id``, ...); the module's ``ranks`` suboptions take ``rank_id`` and ``device_id`` only.
A Ctrl-C (or SIGTERM) to ansible-playbook during any of the three stops the job on the server at once
(its abort file makes every runner, also one forked later, give up at the gate): see ``plugin_utils/_interrupt``.
With ``barrier`` (the play's hosts that start ranks) the task ends only once every listed server's staging wait
has, so that such a Ctrl-C finds every server's task still running (``plugin_utils/_barrier``).
"""

from __future__ import annotations

from typing import Any

from ansible import constants as C
from ansible import context
from ansible.errors import AnsibleActionFail
from ansible.module_utils.parsing.convert_bool import boolean

from ansible_collections.ascend.cluster.plugins.action.training_rank import ActionModule as TrainingRankAction
from ansible_collections.ascend.cluster.plugins.module_utils._job_launcher import PER_DEVICE, check_layout
from ansible_collections.ascend.cluster.plugins.plugin_utils import _barrier as barrier
from ansible_collections.ascend.cluster.plugins.plugin_utils import _interrupt as interrupt

JOB_MODULE = "ascend.cluster.training_job"
# The action's own options: taken out before the module runs (documented with the module).
OWN = ("record", "rank_table", "write_rank_table", "stage_timeout", "barrier")


class ActionModule(TrainingRankAction):
    """Controller half of ``ascend.cluster.training_ranks``."""

    def run(self, tmp: Any = None, task_vars: dict | None = None) -> dict:
        task_vars = task_vars or {}
        own = {name: self._task.args.pop(name) for name in OWN if name in self._task.args}
        ranks = self._task.args.get("ranks")
        if isinstance(ranks, list):
            try:
                self._task.args["ranks"] = [{"rank_id": rank["rank_id"], "device_id": rank["device_id"]} for rank in ranks]
            except (KeyError, TypeError) as exc:
                raise AnsibleActionFail(f"ranks: every entry needs rank_id and device_id ({exc!r})") from exc
        args = self._task.args
        launcher = args.get("launcher") or PER_DEVICE
        if launcher != PER_DEVICE and isinstance(ranks, list):
            try:  # before any runner starts: a launcher would number the ranks otherwise than the table
                check_layout(str(launcher), args["ranks"], int(args.get("node_rank") or 0))
            except (TypeError, ValueError) as exc:
                return dict(failed=True, msg=str(exc))
        try:
            record = boolean(own.get("record", False))
            stage_timeout = float(own.get("stage_timeout") or 0)
        except (TypeError, ValueError) as exc:
            return dict(failed=True, msg=f"record / stage_timeout: {exc}")
        hosts = [str(host) for host in own.get("barrier") or []]
        together = stage_timeout > 0 and barrier.applies(hosts, context.CLIARGS.get("forks"))
        # DEFAULT_LOCAL_TMP: the run's own directory, made by the main process before it forked the workers (set at runtime,
        # hence unknown to mypy)
        local_tmp = str(C.DEFAULT_LOCAL_TMP)  # type: ignore[attr-defined]
        directory = barrier.path(local_tmp, f"staged-{args.get('job_id')}") if together else ""
        with interrupt.Guard() as guard:
            try:
                try:
                    result = self._launch(tmp, task_vars, args, own, record, stage_timeout)
                finally:
                    if directory:  # whatever happened here, the other servers must not wait for this one
                        barrier.arrive(directory, str(task_vars.get("inventory_hostname")))
                if directory:  # keep this task running (and Ctrl-C-able) until every server's staging wait has ended
                    barrier.wait(directory, hosts, stage_timeout + 10.0)
                return result
            except interrupt.Interrupted as exc:
                return interrupt.release_staging(
                    self, guard, exc.signum, str(args.get("job_id")), args.get("job_root"), task_vars, args.get("kill_grace")
                )

    def _launch(self, tmp: Any, task_vars: dict, args: dict, own: dict, record: bool, stage_timeout: float) -> dict:
        """Record (with ``record``), start, then wait until staged (with ``stage_timeout``); the first failure ends it."""
        if boolean(args.get("detach", False)):  # the module does all three in one call
            args.update({name: own[name] for name in OWN if name in own and name != "barrier"})
            return self._name_the_server(super().run(tmp, task_vars), args, task_vars)
        if record:
            recorded = self._record(args, own, task_vars)
            if recorded.get("failed"):
                return recorded
        started = super().run(tmp, task_vars)
        if started.get("failed") or stage_timeout <= 0:
            return started
        return self._staged(started, args, stage_timeout, task_vars)

    def _module_call(self, args: dict, task_vars: dict, wrap_async: bool) -> dict:
        """A detached start goes to ``training_job state=stage`` (the same work, ``_job_stage``): the pre-flight ran that
        module on this server just before, so Ansible reuses its payload instead of building a second one (~0.25 s)."""
        if wrap_async or not boolean(args.get("detach", False)):
            return super()._module_call(args, task_vars, wrap_async)
        stage = {k: v for k, v in args.items() if k != "group_secret"}  # the secret goes as training_job's own no_log option
        module_args = {"state": "stage", "stage": stage}
        if args.get("group_secret") is not None:
            module_args["group_secret"] = args["group_secret"]
        return self._execute_module(module_name=JOB_MODULE, module_args=module_args, task_vars=task_vars)

    def _job_args(self, args: dict, **more: Any) -> dict:
        job = {"job_id": args.get("job_id"), **more}
        if args.get("job_root") is not None:
            job["job_root"] = args["job_root"]
        return job

    def _record(self, args: dict, own: dict, task_vars: dict) -> dict:
        """``training_job state=record``: the table written (or only checked) and compared on disk, then the job recorded."""
        record = self._job_args(args, state="record", run_dir=args.get("run_dir"), ranks=args.get("ranks"))
        if own.get("rank_table") is not None:
            record.update(
                rank_table=own["rank_table"],
                rank_table_path=args.get("rank_table_path"),
                write_rank_table=boolean(own.get("write_rank_table", True)),
            )
        return self._name_the_server(self._execute_module(module_name=JOB_MODULE, module_args=record, task_vars=task_vars), args, task_vars)

    @staticmethod
    def _name_the_server(result: dict, args: dict, task_vars: dict) -> dict:
        """A rank table found wrong on disk: the message names the server."""
        if result.get("rank_table_mismatch"):
            server = task_vars.get("inventory_hostname", "?")
            result["msg"] = f"{args.get('rank_table_path')} on {server} is not the job's rank table: re-run the rank_table role"
        return result

    def _staged(self, started: dict, args: dict, timeout: float, task_vars: dict) -> dict:
        """Wait until every local rank is staged at the gate; the start's result with ``staged`` (failed when one could not stage)."""
        staged = self._execute_module(
            module_name=JOB_MODULE, module_args=self._job_args(args, state="staged", timeout=timeout), task_vars=task_vars
        )
        result = dict(started, staged=staged)
        if staged.get("failed"):
            result.update(failed=True, msg=staged.get("msg"))
        return result
