# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The launch_training role's filters: the launch's refusals and verdicts, its layout, restarts, reports and diagnosis.

Filters ``ascend.cluster.launch_layout``, ``ascend.cluster.aoe_refusal``, ``ascend.cluster.preflight_verdict``,
``ascend.cluster.restart_plan``, ``ascend.cluster.rank_rows``, ``ascend.cluster.job_summary``,
``ascend.cluster.stop_summary``, ``ascend.cluster.diagnosis``, ``ascend.cluster.launcher_args_refusal``; each documented
in the YAML file of its name beside this one."""

from __future__ import annotations

from typing import Any

from ansible_collections.ascend.cluster.plugins.plugin_utils._errors import filter_errors


@filter_errors("launch_layout")
def launch_layout(hosts: Any, slices: Any, aoe: bool = False, per_node: bool = False) -> dict:
    """Rank 0's host, the hosts that stage and join the job's group, the AOE host and the per-node launcher's numbering."""
    # imported when called, not when Ansible loads the file (docs/contracts.md, filter files)
    from ansible_collections.ascend.cluster.plugins.plugin_utils._rank.layout import launch_layout as _launch_layout

    return _launch_layout(hosts, slices, aoe=bool(aoe), per_node=bool(per_node))


@filter_errors("aoe_refusal")
def aoe_refusal(
    hosts: Any, hostvars: Any, aoe: bool = False, use_library: bool | None = None, aoe_mode: int = 4, launcher: str = "per_device"
) -> str:
    # imported when called, not when Ansible loads the file (docs/contracts.md, filter files)
    from ansible_collections.ascend.cluster.plugins.plugin_utils._launch.checks import aoe_refusal as _aoe_refusal

    return _aoe_refusal(hosts, hostvars, aoe=aoe, use_library=use_library, aoe_mode=aoe_mode, launcher=launcher)


@filter_errors("preflight_verdict")
def preflight_verdict(
    hosts: Any,
    hostvars: Any,
    result: str = "_ascend_preflight",
    aoe: bool = False,
    use_library: bool | None = None,
    allow_mixed_versions: bool = False,
) -> dict:
    # imported when called, not when Ansible loads the file (docs/contracts.md, filter files)
    from ansible.utils.display import Display

    from ansible_collections.ascend.cluster.plugins.plugin_utils._launch.checks import preflight_verdict as _preflight_verdict

    verdict = _preflight_verdict(
        hosts, hostvars, result=result, aoe=aoe, use_library=use_library, allow_mixed_versions=allow_mixed_versions
    )
    for warning in verdict["warnings"]:  # each on its own line, naming its server
        Display().warning(warning)
    return verdict


@filter_errors("restart_plan")
def restart_plan(
    summary: Any,
    watch: Any = None,
    diagnosis: Any = None,
    attempts: Any = None,
    max_restarts: int = 0,
    failed_at: Any = None,
    servers: Any = None,
    np: Any = None,
    min_np: Any = 0,
    allow_partial: Any = False,
    spread: Any = True,
    play_hosts: Any = None,
    spares: Any = None,
    spares_read: Any = False,
) -> dict:
    # imported when called, not when Ansible loads the file (docs/contracts.md, filter files)
    from ansible.module_utils.parsing.convert_bool import boolean

    from ansible_collections.ascend.cluster.plugins.plugin_utils._launch import restart
    from ansible_collections.ascend.cluster.plugins.plugin_utils._rank.select import plain_copy
    from ansible_collections.ascend.cluster.plugins.plugin_utils._rank.servers import ServersError, server_from_hostvars

    attempts = list(attempts or [])
    if (diagnosis or {}).get("job_id") not in (None, summary.get("job_id")):
        diagnosis = {}  # an earlier attempt's diagnosis says nothing of this one
    read = []  # the spares whose NPUs were read (their hostvars have the facts)
    for hostvars in spares or []:
        try:
            read.append(server_from_hostvars(hostvars))
        except ServersError:
            pass  # not read (yet), or unreadable: the decision says which
    layout = {
        "servers": plain_copy(list(servers or [])),
        "np": int(np or 0),
        "min_np": int(min_np or 0),
        "allow_partial": boolean(allow_partial, strict=True),
        "spread": boolean(spread, strict=True),
        "play_hosts": [str(h) for h in play_hosts or []],
        "spares_group": [str(h.get("inventory_hostname")) for h in spares or []],
        "spares": read,
        "spares_read": boolean(spares_read, strict=True),
    }
    decision = restart.decide(summary, watch or {}, diagnosis or {}, attempts, int(max_restarts), layout)
    entry = restart.record(len(attempts), str(summary.get("job_id") or ""), summary, decision, failed_at)
    return dict(decision, record=entry, attempts=attempts + [entry])


@filter_errors("rank_rows")
def rank_rows(hosts: Any, hostvars: Any, result: str) -> list:
    # imported when called, not when Ansible loads the file (docs/contracts.md, filter files)
    from ansible_collections.ascend.cluster.plugins.plugin_utils._launch.report import rank_rows as _rank_rows

    return _rank_rows(hosts, hostvars, result)


@filter_errors("job_summary")
def job_summary(
    hosts: Any,
    hostvars: Any,
    result: str,
    job_id: str = "",
    kind: str = "train",
    all_rows: bool = False,
    ok_rows: int = 4,
    failure: Any = None,
    message: str = "",
    attempts: Any = None,
    resumed: Any = None,
) -> dict:
    # imported when called, not when Ansible loads the file (docs/contracts.md, filter files)
    from ansible_collections.ascend.cluster.plugins.plugin_utils._launch.report import job_summary as _job_summary
    from ansible_collections.ascend.cluster.plugins.plugin_utils._launch.restart import summarised

    summary = _job_summary(
        hosts, hostvars, result, job_id=job_id, kind=kind, all_rows=all_rows, ok_rows=ok_rows, failure=failure, message=message
    )
    return summarised(summary, list(attempts or []), resumed=list(resumed or []))


@filter_errors("stop_summary")
def stop_summary(results: Any, check_mode: bool = False) -> str:
    # imported when called, not when Ansible loads the file (docs/contracts.md, filter files)
    from ansible_collections.ascend.cluster.plugins.plugin_utils._launch.report import stop_summary as _stop_summary

    return _stop_summary(results, check_mode=check_mode)


@filter_errors("diagnosis")
def diagnosis(
    servers: Any,
    hostvars: Any,
    job: str = "_ascend_diag",
    npu: str = "_ascend_diag_npu",
    clock: str = "_ascend_diag_clock",
    firewall: str = "_ascend_diag_firewall",
    connect_timeout: Any = 120,
    group_view: Any = None,
) -> dict:
    # imported when called, not when Ansible loads the file (docs/contracts.md, filter files)
    from ansible_collections.ascend.cluster.plugins.plugin_utils._launch.diagnosis import from_hostvars
    from ansible_collections.ascend.cluster.plugins.plugin_utils._launch.report import with_group_problem

    names = {"job": job, "npu": npu, "clock": clock, "firewall": firewall}
    found = from_hostvars(list(servers), hostvars, names, float(connect_timeout), group_view)
    return with_group_problem(found, list(servers), hostvars, job)


@filter_errors("launcher_args_refusal")
def launcher_args_refusal(args: Any, launcher: str = "per_device") -> str:
    # imported when called, not when Ansible loads the file (docs/contracts.md, filter files)
    from ansible_collections.ascend.cluster.plugins.module_utils._job.launcher_args import refusals

    return "; ".join(refusals(str(launcher), list(args or [])))


# Every filter of this file, registered under its function's name (the name its YAML documentation has).
FILTERS = (
    launch_layout,
    aoe_refusal,
    preflight_verdict,
    restart_plan,
    rank_rows,
    job_summary,
    stop_summary,
    diagnosis,
    launcher_args_refusal,
)


class FilterModule:
    def filters(self) -> dict:
        return {function.__name__: function for function in FILTERS}
