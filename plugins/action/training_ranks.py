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

The role passes the host's slice of the rank layout as it is: the module takes each entry's ``local_index`` and
``local_count`` as the layout numbered them (``module_utils/_job_stage.local_places``).
A Ctrl-C (or SIGTERM) to ansible-playbook during any of the three stops the job on the server at once
(its abort file makes every runner, also one forked later, give up at the gate): see ``plugin_utils/_interrupt``.
With ``barrier`` (the play's hosts that start ranks) and ``anchor`` (the coordinator host), the anchor's task lasts
until every other server's stage task has ended and the job's group opened the gate (``join_wait``), so that a Ctrl-C at
any moment of the staging finds a worker that releases the whole job and says one line for it (``plugin_utils/_staging``).
"""

from __future__ import annotations

from typing import Any

from ansible import constants as C
from ansible import context
from ansible.errors import AnsibleActionFail
from ansible.module_utils.parsing.convert_bool import boolean

from ansible_collections.ascend.cluster.plugins.action.training_rank import ActionModule as TrainingRankAction
from ansible_collections.ascend.cluster.plugins.module_utils import _job_group as job_group
from ansible_collections.ascend.cluster.plugins.module_utils import _options as options
from ansible_collections.ascend.cluster.plugins.module_utils._job_launcher import PER_DEVICE, check_layout
from ansible_collections.ascend.cluster.plugins.plugin_utils import _interrupt as interrupt
from ansible_collections.ascend.cluster.plugins.plugin_utils import _staging as staging

JOB_MODULE = "ascend.cluster.training_job"
STAGING = ("barrier", "anchor", "join_wait")  # the controller's part of the staging (plugin_utils/_staging)
# The action's own options: taken out before the module runs (documented with the module).
OWN = ("record", "rank_table", "write_rank_table", "stage_timeout", "barrier", "anchor", "join_wait")


class ActionModule(TrainingRankAction):
    """Controller half of ``ascend.cluster.training_ranks``."""

    def run(self, tmp: Any = None, task_vars: dict | None = None) -> dict:
        task_vars = task_vars or {}
        own = {name: self._task.args.pop(name) for name in OWN if name in self._task.args}
        ranks = self._task.args.get("ranks")
        if isinstance(ranks, list) and not all(isinstance(rank, dict) and "rank_id" in rank and "device_id" in rank for rank in ranks):
            raise AnsibleActionFail("ranks: every entry needs rank_id and device_id (an entry of the rank layout)")
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
            own_key(args)
        except (TypeError, ValueError) as exc:
            return dict(failed=True, msg=f"record / stage_timeout / group: {exc}")
        return self._staged_together(tmp, task_vars, args, own, record, stage_timeout)

    def _staged_together(self, tmp: Any, task_vars: dict, args: dict, own: dict, record: bool, stage_timeout: float) -> dict:
        """This server's stage; on the anchor (``plugin_utils/_staging``) then the wait for every other server and for the
        gate; a Ctrl-C at any moment of it releases the job (the anchor says one line for it)."""
        me = str(task_vars.get("inventory_hostname"))
        play = set(task_vars.get("ansible_play_hosts") or [])
        # the servers that start ranks, less those out of the play by now (failed, unreachable): no stage task of theirs runs
        hosts = [str(host) for host in own.get("barrier") or [] if not play or str(host) in play]
        forks = context.CLIARGS.get("forks")
        anchor = stage_timeout > 0 and me == str(own.get("anchor") or "") and (staging.uses_anchor(hosts, forks) or hosts == [me])
        # DEFAULT_LOCAL_TMP: the run's own directory, made by the main process before it forked the workers (set at runtime,
        # hence unknown to mypy)
        local_tmp = str(C.DEFAULT_LOCAL_TMP)  # type: ignore[attr-defined]
        markers = staging.Markers(local_tmp, str(args.get("job_id"))) if stage_timeout > 0 and hosts else None
        with interrupt.Guard() as guard:
            try:
                if markers is not None:
                    if anchor:
                        markers.hold(me)
                    markers.start(me)
                result: dict = {"failed": True, "msg": "the stage did not run"}
                try:
                    result = self._launch(tmp, task_vars, args, own, record, stage_timeout)
                finally:
                    if markers is not None:  # whatever happened here, the anchor must not wait for this server
                        markers.arrive(me, not result.get("failed"))
                if anchor and markers is not None and not result.get("failed"):
                    result = self._hold_until_the_gate(result, args, own, hosts, forks, stage_timeout, markers)
                return result
            except interrupt.Interrupted as exc:
                job_id, job_root, grace = str(args.get("job_id")), args.get("job_root"), args.get("kill_grace")
                if anchor and markers is not None:
                    opts = {
                        "job_id": job_id,
                        "job_root": job_root,
                        "grace": grace,
                        "lost_after": (args.get("group") or {}).get("lost_after"),
                    }
                    return staging.release_job(self, guard, exc.signum, opts, task_vars, markers, hosts)
                return staging.release_server(self, guard, exc.signum, job_id, job_root, task_vars, grace, markers)
            finally:
                if anchor and markers is not None:  # after its line was said: a worker that sees no anchor says its own
                    markers.let_go()

    def _hold_until_the_gate(
        self, result: dict, args: dict, own: dict, hosts: list, forks: Any, stage_timeout: float, markers: staging.Markers
    ) -> dict:
        """The anchor, staged: wait until every other server's stage task has ended, then - when all staged - for the job's
        group to open the gate (``gate``: what the launch's gate task would have answered)."""
        others = [host for host in hosts if host != str(own.get("anchor"))]
        arrived = markers.wait_arrivals(others, staging.arrive_timeout(hosts, forks, stage_timeout))
        if len(arrived) < len(others) or not all(arrived.values()):
            return result  # a server could not stage (or never came): the play releases every staged rank
        try:
            wait = float(own.get("join_wait") or 0)
        except (TypeError, ValueError):
            return dict(result, failed=True, msg=f"join_wait: {own.get('join_wait')!r} is not seconds")
        job_root = str(args.get("job_root") or options.DEFAULT_JOB_ROOT)
        return dict(result, gate=staging.open_gate(self, str(args.get("job_id")), job_root, wait))

    def _launch(self, tmp: Any, task_vars: dict, args: dict, own: dict, record: bool, stage_timeout: float) -> dict:
        """Record (with ``record``), start, then wait until staged (with ``stage_timeout``); the first failure ends it."""
        if boolean(args.get("detach", False)):  # the module does all three in one call
            args.update({name: own[name] for name in OWN if name in own and name not in STAGING})
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
            result["msg"] = f"{server}: {result.get('msg')}"
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


def own_key(args: dict) -> None:
    """The job's secret stays on the coordinator's server: every other server is given only its own key, derived here
    (``_job_group.member_key``), so that it can join as itself and as no other server (docs/security.md)."""
    group, secret = args.get("group"), args.get("group_secret")
    if not isinstance(group, dict) or not secret or boolean(group.get("coordinator", False)):
        return
    args["group_secret"] = job_group.member_key(str(secret), str(args.get("job_id")), str(group.get("host")))
