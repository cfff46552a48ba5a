# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""One server's ranks started behind the job's gate: the work of ``training_ranks``, shared with ``training_job state=stage``.

The launch role starts every server's ranks through the ``training_ranks`` action with ``detach``; the action sends
that call to the ``training_job`` module (``state=stage``, the options in ``stage``), the module the pre-flight has
just run on the same server, so that Ansible builds one module payload for both instead of two (a payload costs the
controller about 0.25 s of CPU per run, on the launch's critical path: docs/benchmarks.md, session 10). The
``training_ranks`` module keeps this spec and this code for calls of its own (with ``async``, or without ``detach``).
"""

from __future__ import annotations

import os
from typing import Any

from ansible_collections.ascend.cluster.plugins.module_utils import _options as options
from ansible_collections.ascend.cluster.plugins.module_utils._host.text_file import write_text_atomic
from ansible_collections.ascend.cluster.plugins.module_utils._job import control, files, group
from ansible_collections.ascend.cluster.plugins.module_utils._job.command import resolve_launch
from ansible_collections.ascend.cluster.plugins.module_utils._job.launcher import LAUNCHERS, PER_DEVICE, check_layout
from ansible_collections.ascend.cluster.plugins.module_utils._job.launcher_args import refusals
from ansible_collections.ascend.cluster.plugins.module_utils._job.supervisor import Supervisor, detach, summary

ARGS = options.spec(
    options.TOOL_PATHS,
    options.JOB_ROOT,
    options.LOCK_DIR,
    options.RANK,
    ranks=dict(type="list", elements="dict", required=True, options=options.RANK_ENTRY),
    # the layout's local_count on every entry says it; a hand-written list without it: the number of ranks given
    local_count=dict(type="int"),
    launcher=dict(type="str", choices=list(LAUNCHERS), default=PER_DEVICE),
    launcher_path=dict(type="str"),
    launcher_args=dict(type="list", elements="str", default=[]),
    node_rank=dict(type="int", default=0),
    nnodes=dict(type="int", default=1),
    detach=dict(type="bool", default=False),
    # taken by the action (plugins/action/training_ranks.py) before the module runs, or with detach done by the module itself
    record=dict(type="bool", default=False),
    rank_table=dict(type="str"),
    write_rank_table=dict(type="bool", default=True),
    stage_timeout=dict(type="float", default=0),
    barrier=dict(type="list", elements="str", default=[]),
    anchor=dict(type="str"),
    join_wait=dict(type="float", default=0),
    # files the ranks run (the smoke check's script, the HCCL stand-in), written into run_dir with the stage's call
    run_files=dict(type="dict", default={}),
    # the job's group (module_utils/_job/group): where its coordinator listens, who this server is in it
    group=dict(
        type="dict",
        options=dict(
            address=dict(type="str", required=True),
            port=dict(type="int", required=True),
            host=dict(type="str", required=True),
            server=dict(type="str"),
            coordinator=dict(type="bool", default=False),
            hosts=dict(type="list", elements="str", default=[]),
            lost_after=dict(type="float", default=group.LOST_AFTER_S),
            gate_margin=dict(type="float", default=0.5),
            clock_offset=dict(type="float", default=0.0),
        ),
    ),
    # its secret, an option of its own so that every module that takes it declares it no_log (never logged, never returned)
    group_secret=dict(type="str", no_log=True),
)
MUTUALLY_EXCLUSIVE = [("argv", "command")]
REQUIRED_ONE_OF = [("argv", "command")]


class StageFailed(Exception):
    """The call fails: ``msg`` and the result's other fields (``rank_table_mismatch``, ``staged``, ...)."""

    def __init__(self, msg: str, **fields: Any) -> None:
        super().__init__(msg)
        self.fields = dict(fields, msg=msg)


def check(p: dict) -> None:
    """Refuse what cannot start (StageFailed); ``p`` is the validated options, completed in place (argv, local ranks)."""
    try:
        resolve_launch(p)
    except ValueError as exc:
        raise StageFailed(str(exc)) from None
    if len(set(r["rank_id"] for r in p["ranks"])) != len(p["ranks"]) or len(set(r["device_id"] for r in p["ranks"])) != len(p["ranks"]):
        raise StageFailed("ranks: every rank_id and every device_id may appear once only")
    if p["launcher"] != PER_DEVICE:
        try:
            check_layout(p["launcher"], p["ranks"], p["node_rank"])
        except ValueError as exc:
            raise StageFailed(str(exc)) from None
        refused = refusals(p["launcher"], p["launcher_args"])
        if refused:
            raise StageFailed("; ".join(refused))
        if p["aoe_mode"] is not None:
            raise StageFailed("aoe_mode: an AOE tuning run is one process on rank 0; use launcher=per_device for it")
        if not 0 <= p["node_rank"] < p["nnodes"]:
            raise StageFailed("node_rank %d is not one of the %d servers (0..%d)" % (p["node_rank"], p["nnodes"], p["nnodes"] - 1))
    if p["aoe_mode"] is not None and p["tune_bank_path"]:
        try:  # the tuner writes its repository there and needs the directory to exist
            os.makedirs(p["tune_bank_path"], 0o755, exist_ok=True)
            os.chmod(p["tune_bank_path"], 0o755)
        except OSError as exc:
            raise StageFailed("cannot make the AOE tuning repository directory %s: %s" % (p["tune_bank_path"], exc)) from None
    for name, text in p["run_files"].items():
        if not name or name in (".", "..") or "/" in name or "\0" in name:
            raise StageFailed("run_files: %r is not a plain file name (no '/', not '.' or '..')" % name)
        if not isinstance(text, str):
            raise StageFailed("run_files: the text of %s is a %s, not a string" % (name, type(text).__name__))
    if p["group"] is not None:
        if not p["group_secret"]:
            raise StageFailed("group: the job's group needs its secret (group_secret)")
        if not 0 < p["group"]["port"] < 65536:
            raise StageFailed("group: port %d is not a TCP port (1-65535)" % p["group"]["port"])
        if p["group"]["coordinator"] and p["group"]["host"] not in p["group"]["hosts"]:
            raise StageFailed("group: the coordinator's server %s must be one of its hosts" % p["group"]["host"])
        if p["group"]["lost_after"] < group.MIN_LOST_AFTER_S:
            raise StageFailed(
                "group: lost_after %g s is under %g s, two of the group's %g s heartbeats: one heartbeat late on a busy server "
                "would stop a healthy job as lost; set ascend_launch_lost_after_s to %g or more (default %g)"
                % (p["group"]["lost_after"], group.MIN_LOST_AFTER_S, group.HEARTBEAT_S, group.MIN_LOST_AFTER_S, group.LOST_AFTER_S)
            )
        if p["group"]["gate_margin"] < 0:
            raise StageFailed("group: gate_margin must be 0 s or more")
        p["group"] = dict(p["group"], secret=p["group_secret"])
    p["ranks"], p["local_count"] = local_places(p["ranks"], p["local_count"])
    if p["launcher"] != PER_DEVICE and [r["local_rank"] for r in p["ranks"]] != list(range(len(p["ranks"]))):
        raise StageFailed("ranks: %s numbers its workers by their order in ranks, but local_index gives another order" % p["launcher"])


def local_places(ranks: list, local_count: int | None) -> tuple:
    """Each rank as the runners take it (``rank_id``, ``device_id``, ``local_rank``, ``local_count``) and the server's
    ``local_count``. The numbering is the rank layout's (``local_index`` and ``local_count`` on every entry, as
    ``plugin_utils/_rank/layout`` gives them); a list without them (written by hand) is numbered by its order and counted.
    StageFailed when the entries and ``local_count`` disagree, or a ``local_index`` is repeated or out of range."""
    indexes = [r.get("local_index") for r in ranks]
    if all(index is None for index in indexes):
        indexes = list(range(len(ranks)))
    elif any(index is None for index in indexes):
        raise StageFailed("ranks: give local_index for every rank or for none (the rank layout gives it for every rank)")
    counts = {r["local_count"] for r in ranks if r.get("local_count") is not None}
    if local_count is not None:
        counts.add(local_count)
    if len(counts) > 1:
        raise StageFailed(
            "ranks: local_count disagrees (%s): every entry and the option must give the server's number of ranks"
            % ", ".join(str(c) for c in sorted(counts))
        )
    count = counts.pop() if counts else len(ranks)
    if count < len(ranks):
        raise StageFailed("local_count %d is fewer than the %d ranks given" % (count, len(ranks)))
    if len(set(indexes)) != len(indexes) or not all(0 <= index < count for index in indexes):
        raise StageFailed("ranks: every local_index must be different and within 0..%d (local_count %d)" % (count - 1, count))
    keep = [dict(rank_id=r["rank_id"], device_id=r["device_id"], local_rank=index, local_count=count) for r, index in zip(ranks, indexes)]
    return keep, count


def write_run_files(p: dict) -> None:
    """``run_files`` into ``run_dir`` (made when missing, mode 0755): each written atomically, mode 0644."""
    if not p["run_files"]:
        return
    try:
        os.makedirs(p["run_dir"], 0o755, exist_ok=True)
        for name, text in sorted(p["run_files"].items()):
            write_text_atomic(os.path.join(p["run_dir"], name), text, 0o644)
    except OSError as exc:
        raise StageFailed("cannot write the job's files into %s: %s" % (p["run_dir"], exc)) from None


def run(p: dict) -> dict:
    """Check, then start: detached (the module returns once staged) or supervised to the end. StageFailed on failure."""
    check(p)
    if p["detach"]:
        return start_detached(p)
    write_run_files(p)
    result = supervise(p, open_group(p))
    if result.get("failed"):
        raise StageFailed(**result)
    return result


def start_detached(p: dict) -> dict:
    """With ``record``: the job's own rank table written into its run directory and checked, the job recorded with the
    table's sha256 (each runner checks it before its rank starts); ``run_files`` written; the supervisor started as a
    daemon; with ``stage_timeout``: the wait until every rank is staged (``staged``). The first failure raises
    StageFailed; one after the job was recorded says what the job left on the server (``_job.control.left_behind``)."""
    if p["record"]:
        try:
            table = control.record_with_table(p["job_root"], p, p["rank_table_path"], p["rank_table"], p["write_rank_table"])
        except control.RankTableMismatch as exc:
            raise StageFailed(str(exc), rank_table_mismatch=True, rank_table_steps=exc.steps) from None
        except control.JobError as exc:
            raise StageFailed(str(exc)) from None
        if table.get("rank_table_sha256"):
            p["rank_table_sha256"] = table["rank_table_sha256"]  # every runner checks it just before its rank starts
    else:
        table = {}
    try:
        return supervise_detached(p, table)
    except StageFailed as exc:
        if p["record"] and control.LEFT_BEHIND not in exc.fields["msg"]:
            exc.fields["msg"] = "%s; %s" % (exc.fields["msg"], control.left_behind(p["job_root"], p, p["lock_dir"]))
        raise


def supervise_detached(p: dict, table: dict) -> dict:
    """:func:`start_detached` once the job is recorded: ``run_files``, the supervisor, the wait until staged."""
    write_run_files(p)
    job_dir = files.job_dir(p["job_root"], p["job_id"])
    try:
        os.makedirs(job_dir, 0o755, exist_ok=True)
        results_file = os.path.join(job_dir, files.SUPERVISOR_FILE)
    except OSError as exc:
        raise StageFailed("cannot start the supervisor of job %s: %s" % (p["job_id"], exc)) from None
    listener = open_group(p)
    try:
        pid = detach(lambda: supervise(p, listener), results_file)
    except OSError as exc:
        raise StageFailed("cannot start the supervisor of job %s: %s" % (p["job_id"], exc)) from None
    finally:
        if listener is not None:  # the supervisor's daemon holds its own copy
            listener.close()
    result = dict(changed=True, started=True, finished=False, results_file=results_file, supervisor_pid=pid, **table)
    if p["stage_timeout"] > 0:
        unchanged = {k: v for k, v in result.items() if k != "changed"}
        try:
            ranks = control.wait_staged(p["job_root"], control.load_job(p["job_root"], p["job_id"]), p["stage_timeout"])
        except control.JobError as exc:
            raise StageFailed(str(exc), **unchanged) from None
        failure = control.staging_failure(ranks, control.left_behind(p["job_root"], p, p["lock_dir"]) if p["record"] else None)
        result["staged"] = dict(changed=False, job_id=p["job_id"], ranks=ranks, **(dict(failed=True, msg=failure) if failure else {}))
        if failure:
            raise StageFailed(failure, **dict(unchanged, staged=result["staged"]))
    return result


def open_group(p: dict):
    """With ``group``: the job's secret written into its record (mode 0600) and, on the coordinator's server, the group's
    listening socket bound (so that a port already taken fails this call, before any rank starts); the socket or None."""
    if p["group"] is None:
        return None
    job_dir = files.job_dir(p["job_root"], p["job_id"])
    try:
        os.makedirs(job_dir, 0o755, exist_ok=True)
        files.write_secret(job_dir, p["group"]["secret"])
    except OSError as exc:
        raise StageFailed("cannot write the job's group secret into %s: %s" % (job_dir, exc)) from None
    if not p["group"]["coordinator"]:
        return None
    try:
        return group.listen(p["group"]["address"], p["group"]["port"])
    except group.GroupError as exc:
        raise StageFailed(str(exc)) from None


def supervise(p: dict, listener=None) -> dict:
    """Start every rank, wait for them all: the module's result (``failed`` when a rank did not exit 0)."""
    states = Supervisor(p, listener).run()
    ok, msg = summary(states)
    return dict(changed=True, msg=msg, ranks=states) if ok else dict(failed=True, msg=msg, ranks=states)
