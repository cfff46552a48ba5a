# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The smoke check's summary: one row per finding, from every stage of ``ascend.cluster.smoke``.

Stages: ``facts`` (a server whose devices could not be read), ``health`` (the ``net_health_report``
of the play, narrowed to the job's devices once they are known), ``rank_table`` and ``launch``
(stage-level results handed in by the role), ``rank`` (each rank's verdict, the last
``ASCEND_RANK_CHECK_VERDICT {json}`` line its check wrote to its log), and with ``collective=true``
``collective`` (each rank's links from the HCCL stand-in's ``HCCL_STANDIN_RESULT {json}`` line, against
the bandwidth floor).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from ansible_collections.ascend.cluster.plugins.plugin_utils._errors import ClusterSpecError
from ansible_collections.ascend.cluster.plugins.plugin_utils._text_table import text_table

# Written by roles/smoke_check/files/ascend_rank_check.py (which cannot import this module).
VERDICT = "ASCEND_RANK_CHECK_VERDICT"
COLUMNS = ("stage", "server", "device", "rank", "result", "detail")
OK, FAIL = "OK", "FAIL"
# Written by examples/train/hccl_standin.py (which cannot import this module).
STANDIN_RESULT = "HCCL_STANDIN_RESULT"
# The order of the summary: each stage's rows in the order they happen.
STAGES = ("facts", "health", "rank_table", "launch", "rank", "collective")


def rank_verdict(log: Any) -> tuple[bool, str]:
    """(ok, detail) of one rank from its log text: the last verdict line, or why there is none."""
    lines = [line.strip() for line in str(log or "").splitlines() if line.strip()]
    for line in reversed(lines):
        if line.startswith(VERDICT + " "):
            try:
                verdict = json.loads(line[len(VERDICT) + 1 :])
                failed = verdict["failed"]
                detail = "; ".join(f"{f['check']}: {f['detail']}" for f in failed)
                return (not failed, detail or f"{verdict['passed']} checks passed")
            except (ValueError, KeyError, TypeError) as exc:
                return False, f"unreadable verdict line ({exc}): {line[:200]}"
    if not lines:
        return False, "no verdict: the rank wrote nothing (did the check start? see the launch row and the rank's log)"
    return False, f"no verdict; the rank's last line: {lines[-1][:200]}"


def _health_rows(health: Mapping[str, Any], ranks: Mapping[tuple[str, int], Any] | None) -> list[dict[str, Any]]:
    """Health findings; with ``ranks`` (the job's devices by (server, device)) only those devices'."""
    rows = []
    problems = [str(p) for p in health.get("problems") or []]
    for bad in health.get("bad") or []:
        key = (str(bad.get("server")), int(bad.get("device")))
        if ranks is not None and key not in ranks:
            continue
        prefix = f"{key[0]} device {key[1]}: "
        detail = next((p[len(prefix) :] for p in problems if p.startswith(prefix)), str(bad.get("status")))
        rows.append(
            {
                "stage": "health",
                "server": key[0],
                "device": key[1],
                "rank": None if ranks is None else ranks[key],
                "result": FAIL,
                "detail": detail,
            }
        )
    for problem in problems:
        if problem.startswith("cluster: "):
            rows.append({"stage": "health", "result": FAIL, "detail": problem[len("cluster: ") :]})
    if not rows:
        devices = len(ranks) if ranks is not None else len(health.get("rows") or [])
        rows.append({"stage": "health", "result": OK, "detail": f"{devices} device(s): device IP, link UP, net_health Success"})
    return rows


# What Ansible wraps around a failed template or action, before the message that matters.
_WRAPPERS = re.compile(r"^(?:.*The (?:filter|lookup|test) plugin '[^']+' failed: |(?:Task failed: |Action failed: )+)", re.S)


def stage_message(msg: Any) -> str:
    """A failed task's message without Ansible's wrapping (``Task failed: ... The filter plugin 'x' failed: ``)."""
    return _WRAPPERS.sub("", str(msg or "").strip(), count=1).strip()


def _finding(row: Mapping[str, Any]) -> str:
    """A FAIL row as one finding: ``health server1 device 3 rank 11: link DOWN``."""
    where = (
        row["stage"],
        row.get("server"),
        f"device {row['device']}" if row.get("device") is not None else None,
        f"rank {row['rank']}" if row.get("rank") is not None else None,
    )
    return " ".join(str(p) for p in where if p) + f": {row['detail']}"


def _stage_row(stage: Any, index: int) -> dict[str, Any]:
    if not isinstance(stage, Mapping) or not stage.get("stage"):
        raise ClusterSpecError(f"stages entry {index} is not a mapping with a stage name: {stage!r}")
    return {
        "stage": stage["stage"],
        "server": stage.get("server"),
        "device": None,
        "rank": None,
        "result": OK if stage.get("ok") else FAIL,
        "detail": stage_message(stage.get("detail")),
    }


def smoke_summary(
    ranks: Sequence[Any] | None,
    health: Mapping[str, Any] | None = None,
    stages: Sequence[Any] = (),
    launched: bool = True,
) -> dict[str, Any]:
    """``{rows, failures, ok}`` for the smoke run.

    ``ranks``: the job's ranks, ``[{server, device, rank, log}]`` (``log``: the text of the
    rank's fetched log), None or empty when no table was made; they narrow the health findings to
    the job's devices and, when ``launched``, each gives a ``rank`` row from its verdict.
    ``health``: the ``net_health_report`` result (None when the stage did not run). ``stages``:
    stage-level results, ``[{stage, server?, ok, detail}]`` (facts, rank_table, launch).
    """
    if ranks is not None and (isinstance(ranks, (str, Mapping)) or not isinstance(ranks, Sequence)):
        raise ClusterSpecError("the input must be a list of ranks ({server, device, rank, log}) or none")
    if isinstance(stages, (str, Mapping)) or not isinstance(stages, Sequence):
        raise ClusterSpecError("stages must be a list of {stage, server, ok, detail}")
    rows = [_stage_row(stage, i) for i, stage in enumerate(stages)]
    job: list[dict[str, Any]] = []
    for index, rank in enumerate(ranks or []):
        if not isinstance(rank, Mapping) or not {"server", "device", "rank"} <= set(rank):
            raise ClusterSpecError(f"rank entry {index} needs server, device and rank: {rank!r}")
        job.append(
            {
                "stage": "rank",
                "server": str(rank["server"]),
                "device": int(rank["device"]),
                "rank": int(rank["rank"]),
                "log": rank.get("log"),
            }
        )
    if health is not None:
        if not isinstance(health, Mapping):
            raise ClusterSpecError(f"health must be the net_health_report result, got {health!r}")
        rows += _health_rows(health, {(r["server"], r["device"]): r["rank"] for r in job} if job else None)
    for rank in sorted(job, key=lambda r: r["rank"]) if launched else []:
        ok, detail = rank_verdict(rank.pop("log"))
        rows.append(dict(rank, result=OK if ok else FAIL, detail=detail))
    rows.sort(key=lambda r: STAGES.index(r["stage"]) if r["stage"] in STAGES else len(STAGES))
    failures = [_finding(row) for row in rows if row["result"] == FAIL]
    return {"rows": rows, "failures": failures, "ok": not failures}


def _standin_result(log: Any) -> dict[str, Any] | str:
    """The HCCL stand-in's result from a rank's log, or why there is none (its last line)."""
    lines = [line.strip() for line in str(log or "").splitlines() if line.strip()]
    for line in reversed(lines):
        if line.startswith(STANDIN_RESULT + " "):
            try:
                result = json.loads(line[len(STANDIN_RESULT) + 1 :])
                links = [
                    {"ring": str(k["ring"]), "to_rank": int(k["to_rank"]), "to_ip": str(k["to_ip"]), "mb_per_s": float(k["mb_per_s"])}
                    for k in result["links"]
                ]
                return {"from_ip": str(result["links"][0]["from_ip"]) if result["links"] else "", "links": links}
            except (ValueError, KeyError, TypeError, IndexError) as exc:
                return f"unreadable result line ({exc}): {line[:200]}"
    if not lines:
        return "no result: the rank wrote nothing"
    return f"no result; the rank's last line: {lines[-1][:200]}"


def collective_rows(ranks: Sequence[Mapping[str, Any]], floor: float = 0.0) -> list[dict[str, Any]]:
    """One ``collective`` row per rank of the stand-in's job (``[{server, device, rank, log}]``).

    OK lists each link the rank sent on with its bandwidth; FAIL names every link below ``floor``
    (MB/s; 0 accepts any), or says why the rank has no result.
    """
    rows = []
    for rank in sorted(ranks, key=lambda r: int(r["rank"])):
        row = {"stage": "collective", "server": str(rank["server"]), "device": int(rank["device"]), "rank": int(rank["rank"])}
        result = _standin_result(rank.get("log"))
        if isinstance(result, str):
            rows.append(dict(row, result=FAIL, detail=result))
            continue
        slow = [link for link in result["links"] if link["mb_per_s"] < floor]
        shown = slow or result["links"]
        detail = "; ".join(
            f"link {result['from_ip']} -> rank {k['to_rank']} {k['to_ip']} ({k['ring']}): {k['mb_per_s']:.1f} MB/s" for k in shown
        )
        if slow:
            detail += f", below the floor of {int(floor) if float(floor).is_integer() else floor} MB/s"
        rows.append(dict(row, result=FAIL if slow else OK, detail=detail or "no links (a single rank)"))
    return rows


def hccl_test_rows(runs: Mapping[str, Any], min_gbps: float = 0.0) -> list[dict[str, Any]]:
    """``collective`` rows of the real-hardware mode: one per server (its NPUs of the job alone), then the whole job's.

    ``runs``: per server, ``{server, cluster}`` as the role left them (each a run of
    :func:`~._hccl_test.plan` with what ``ansible.builtin.command`` registered: ``rc``, ``stdout``, ``stderr``, or
    ``msg`` when it could not start; ``{refused}`` for a cluster run that cannot be made). A run fails on a non-zero
    exit, no result table, a ``failed`` check, or ``alg_bandwidth`` below ``min_gbps`` GB/s (0: no floor).
    """
    from ansible_collections.ascend.cluster.plugins.plugin_utils._net.hccl_test import verdict

    rows, cluster = [], []
    for name, planned in runs.items():
        if not isinstance(planned, Mapping):
            continue
        run = planned.get("server")
        if isinstance(run, Mapping):
            ok, detail, _gbps = verdict(run, min_gbps)
            devices = ",".join(str(d) for d in run.get("devices") or [])
            row = {"stage": "collective", "server": name, "device": None, "rank": None}
            rows.append(dict(row, result=OK if ok else FAIL, detail=f"devices {devices}: {detail}" if devices else detail))
        if isinstance(planned.get("cluster"), Mapping):
            cluster.append(planned["cluster"])
    for run in cluster:
        ok, detail, _gbps = verdict(run, min_gbps)
        servers = len([line for line in str(run.get("hostfile") or "").splitlines() if line.strip()])
        where = f"all {servers} servers: " if servers else "all servers: "
        row = {"stage": "collective", "server": None, "device": None, "rank": None}
        rows.append(dict(row, result=OK if ok else FAIL, detail=where + detail))
    return rows


def _read_log(path: str) -> str:
    """A fetched rank log's text, or '' when it is missing or unreadable (the verdict then says so)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read()
    except OSError:
        return ""


def ran_to_their_end(job: Any, job_id: str) -> bool:
    """Whether the launch's summary of job ``job_id`` (``ascend_job_summary``, docs/summaries.md) shows every rank ended
    by itself: fail-fast off (the smoke launches its check so), and each rank ``done`` or ``failed`` - none stopped, lost
    or never started. A launch that failed that way failed for its ranks' verdicts, which the ``rank`` rows say."""
    if not isinstance(job, Mapping) or str(job.get("job_id") or "") != job_id or job.get("fail_fast") is not False:
        return False
    ranks = job.get("ranks")
    if not isinstance(ranks, Sequence) or not ranks:
        return False
    return all(isinstance(r, Mapping) and r.get("state") in ("done", "failed") for r in ranks)


def _host(hostvars: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    try:
        return hostvars[name]
    except KeyError as exc:
        raise ClusterSpecError(f"host {name!r} is not in hostvars") from exc


def smoke_report(
    hosts: Sequence[str],
    hostvars: Mapping[str, Any],
    *,
    logs_dir: str,
    health: Mapping[str, Any] | None = None,
    health_error: str | None = None,
    table: Mapping[str, Any] | None = None,
    table_error: str | None = None,
    job_id: str = "",
    job: Mapping[str, Any] | None = None,
    check_mode: bool = False,
    all_rows: bool = False,
    ok_rows: int = 4,
    collective: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The smoke run's summary (:func:`smoke_summary`) from what each stage left in the play's hosts.

    ``hosts``: every host of the play; ``hostvars``: Ansible's. Per host it reads
    ``_ascend_smoke_facts`` (the facts stage's registered result: missing, failed or unreachable is a
    ``facts`` finding), ``_ascend_smoke_launch_error`` (set when the launch failed there; empty on a
    server stopped only because another failed) and ``ascend_local_ranks`` (its ranks, whose logs are
    read from ``<logs_dir>/<host>/device_<rank>.log`` once the ranks ran). ``table``: ``{rank_size,
    servers, path}`` of the rank table, None when none was made; ``health_error`` / ``table_error``:
    why a stage failed; ``job``: the launch's summary of the job (:func:`ran_to_their_end`). The ranks ran when a table
    was made without error, this is not check mode, and no launch failed or the job ran every rank to its end.

    Besides ``rows``, ``failures`` and ``ok`` the result is the smoke run's document
    (docs/summaries.md): ``schema``, ``kind`` (``smoke``), ``job_id``, ``check_mode``, ``line`` (the
    one line printed last) and ``table`` (the rows as text, findings first and, unless ``all_rows``,
    only ``ok_rows`` of the OK rows).
    """
    if isinstance(hosts, (str, Mapping)) or not isinstance(hosts, Sequence):
        raise ClusterSpecError(f"the input must be the play's host names, got {hosts!r}")
    per_host = {str(name): _host(hostvars, str(name)) for name in hosts}
    stages: list[dict[str, Any]] = []
    for name, hv in per_host.items():
        facts = hv.get("_ascend_smoke_facts")
        if not isinstance(facts, Mapping) or facts.get("failed") or facts.get("unreachable"):
            detail = facts.get("msg") if isinstance(facts, Mapping) else None
            stages.append(
                {"stage": "facts", "server": name, "ok": False, "detail": detail or "unreachable or failed before the smoke check"}
            )
    if health_error:
        stages.append({"stage": "health", "ok": False, "detail": health_error})
    if table_error:
        stages.append({"stage": "rank_table", "ok": False, "detail": table_error})
    elif table is not None:
        detail = f"{table['rank_size']} ranks on {table['servers']} server(s), {table['path']}"
        stages.append({"stage": "rank_table", "ok": True, "detail": detail})
    # the launch failed - unless its job ran every rank to its end (fail-fast off): then the ranks' verdicts say why
    launch_failed = {
        name: str(hv["_ascend_smoke_launch_error"])
        for name, hv in per_host.items()
        if hv.get("_ascend_smoke_launch_error") is not None and not ran_to_their_end(job, job_id)
    }
    named = [(name, error) for name, error in launch_failed.items() if error]
    for name, error in named:
        stages.append({"stage": "launch", "server": name, "ok": False, "detail": error})
    if launch_failed and not named:
        stages.append({"stage": "launch", "ok": False, "detail": "the launch failed (see the task output above)"})
    launched = table is not None and not table_error and not launch_failed and not check_mode
    if launched:
        stages.append({"stage": "launch", "ok": True, "detail": f"job {job_id}"})
    ranks = [
        {
            "server": name,
            "device": rank["device_id"],
            "rank": rank["rank_id"],
            "log": _read_log(f"{logs_dir}/{name}/device_{rank['rank_id']}.log") if launched else "",
        }
        for name, hv in per_host.items()
        for rank in hv.get("ascend_local_ranks") or []
    ]
    summary = smoke_summary(ranks, health=health, stages=stages, launched=launched)
    if collective is not None:
        hccl_test = isinstance(collective, Mapping) and collective.get("mode") == "hccl_test"
        if not isinstance(collective, Mapping) or not (hccl_test or {"job_id", "logs_dir"} <= set(collective)):
            raise ClusterSpecError(
                f"collective must be {{job_id, logs_dir, floor, error}} or {{mode: hccl_test, min_gbps, error}}, got {collective!r}"
            )
        if collective.get("error"):
            extra = [
                {
                    "stage": "collective",
                    "server": None,
                    "device": None,
                    "rank": None,
                    "result": FAIL,
                    "detail": stage_message(collective["error"]),
                }
            ]
        elif hccl_test:
            extra = hccl_test_rows(
                {name: hv.get("_ascend_smoke_hccl_test") for name, hv in per_host.items() if hv.get("_ascend_smoke_hccl_test")},
                float(collective.get("min_gbps") or 0),
            )
        else:
            extra = collective_rows(
                [dict(rank, log=_read_log(f"{collective['logs_dir']}/{rank['server']}/device_{rank['rank']}.log")) for rank in ranks],
                float(collective.get("floor") or 0),
            )
        summary["rows"] += extra
        summary["failures"] += [_finding(row) for row in extra if row["result"] == FAIL]
        summary["ok"] = not summary["failures"]
    return dict(
        summary,
        schema=1,
        kind="smoke",
        job_id=job_id,
        check_mode=bool(check_mode),
        line=smoke_line(summary, job_id, launched),
        table=text_table(
            summary["rows"],
            COLUMNS,
            ok_column="result",
            ok_values=[OK],
            max_ok=None if all_rows else int(ok_rows),
            more_hint="-e ascend_report_all_rows=true lists them",
        ),
    )


def smoke_line(summary: Mapping[str, Any], job_id: str, launched: bool) -> str:
    """The smoke run in one line: ``smoke <job>: 16/16 ranks OK, health OK, rank table OK`` or
    ``FAILED: smoke <job>: 2 finding(s): <finding> | <finding>``."""
    name = f"smoke {job_id}".strip()
    failures = list(summary["failures"])
    if failures:
        return f"FAILED: {name}: {len(failures)} finding(s): {' | '.join(failures)}"
    rows = summary["rows"]
    ranks = [r for r in rows if r["stage"] == "rank"]
    parts = [f"{len(ranks)}/{len(ranks)} ranks OK"] if launched else ["not launched (check mode)"]
    parts += [f"{stage.replace('_', ' ')} OK" for stage in ("health", "rank_table", "collective") if any(r["stage"] == stage for r in rows)]
    return f"{name}: {', '.join(parts)}"
