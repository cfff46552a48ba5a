# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rank_table role's controller work in one call: servers, selection, HCCL's refusals, table, layout.

The role used to run each step as a task of its own (collect the servers, check the chip, select the
devices, refuse the selection, check the A3 ids, check the device IPs, build, refuse, lay out): about
ten controller tasks, each a worker process and its own templating (issue 10). ``rank_plan`` runs the
same functions the public filters run (``servers_from_facts``, ``select_devices`` / ``npu_env``,
``missing_superpod_ids``, ``missing_device_ips``, ``rank_table``, ``rank_layout``), in the same order,
and stops at the first refusal with the message the role's task printed for it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ansible_collections.ascend.cluster.plugins.plugin_utils._errors import ClusterSpecError
from ansible_collections.ascend.cluster.plugins.plugin_utils._rank.chip_rules import PartialServersRefusal
from ansible_collections.ascend.cluster.plugins.plugin_utils._rank.device_spec import parse_npu_env
from ansible_collections.ascend.cluster.plugins.plugin_utils._rank.layout import rank_layout
from ansible_collections.ascend.cluster.plugins.plugin_utils._rank.select import select_devices
from ansible_collections.ascend.cluster.plugins.plugin_utils._rank.servers import ServersError, servers_from_hostvars
from ansible_collections.ascend.cluster.plugins.plugin_utils._rank.table import build_rank_table, missing_device_ips, missing_superpod_ids

NOT_WRITTEN = "No rank table was written."
# The 910A refusals name the switch as the role's users set it (a playbook's -e, group_vars), not as the filters'
# option allow_partial_servers, which every playbook refuses as a typo of its allow_partial.
PARTIAL_SERVERS_VAR = "ascend_rank_table_allow_partial_910a=true"


def _refusal(exc: ClusterSpecError) -> ClusterSpecError:
    text = exc.naming(PARTIAL_SERVERS_VAR) if isinstance(exc, PartialServersRefusal) else str(exc)
    return ClusterSpecError(f"{text}. {NOT_WRITTEN}")


def _first_chip(servers: list) -> Any:
    return next((server.get("chip") for server in servers if server.get("chip")), None)


def _mixed_chips(servers: list) -> str:
    chips: list = []
    for server in servers:
        if server.get("chip") and server["chip"] not in chips:
            chips.append(server["chip"])
    if len(chips) <= 1:
        return ""
    return (
        f"the play mixes chip generations ({', '.join(str(chip) for chip in chips)}): one HCCL job runs on one generation; "
        "limit the play to one kind of server"
    )


def _missing_ips_refusal(missing: Mapping[str, Any]) -> str:
    count = missing["device_count"]
    if not (missing["required"] and count > 0):
        return ""
    return (
        f"{count} selected {'devices have' if count > 1 else 'device has'} no device IP, which HCCL needs when more than one "
        f"server takes part: {'; '.join(server['label'] for server in missing['servers'])}. Give every device its IP with "
        "ansible-playbook ascend.cluster.prepare (the IP plan: roles/device_ip/README.md), then run this again"
    )


def rank_plan(
    hosts: Any,
    np: Any = None,
    npu_env: str = "",
    spread: bool = False,
    version: Any = "auto",
    order: str = "server_id",
    allow_partial_servers: bool = False,
    template2: Mapping[str, Any] | None = None,
    warn: Callable[[str], None] | None = None,
) -> dict:
    """``{all_servers, job_servers, table, layout}`` for the play's hosts (their variables, in play order).

    ``version`` ``auto`` (or None) picks the chip's format. Raises :class:`ClusterSpecError` with the
    operator's message at the first step that refuses (nothing is written by this function); a 910A refusal
    that ``allow_partial_servers`` would lift names the role's variable (:data:`PARTIAL_SERVERS_VAR`).
    """
    try:
        all_servers = servers_from_hostvars(hosts)
    except ServersError as exc:
        raise ClusterSpecError(str(exc)) from exc
    mixed = _mixed_chips(all_servers)
    if mixed:
        raise ClusterSpecError(mixed)
    unclear = [f"{server['host']}: {server['chip_problem']}" for server in all_servers if server.get("chip_problem")]
    if unclear:
        raise ClusterSpecError(
            "the chip of a server is unclear, and the rank table's rules (device ids, the 910A rings, the table's version) "
            f"depend on it - {'; '.join(unclear)}. Check npu-smi info there (the driver), or leave the server out of the play. "
            + NOT_WRITTEN
        )
    chip = _first_chip(all_servers)
    try:
        if npu_env:
            job_servers = parse_npu_env(npu_env, chip=chip, np=np, available=all_servers)
        else:
            total = sum(len(server["devices"]) for server in all_servers)
            job_servers = select_devices(
                all_servers, np if np is not None else total, chip=chip, allow_partial_servers=allow_partial_servers, spread=spread
            )
    except ClusterSpecError as exc:
        raise _refusal(exc) from exc
    table_version = None if version in (None, "auto") else version
    missing_ids = missing_superpod_ids(job_servers, version=table_version, chip=chip)
    if missing_ids:
        raise ClusterSpecError(
            "a version 1.2 (A3 SuperPoD) rank table needs ids that hccn_facts cannot read: set ascend_super_pod_id and "
            "ascend_super_device_ids ({device_id: super_device_id}) in the inventory for " + ", ".join(missing_ids)
        )
    refusal = _missing_ips_refusal(missing_device_ips(job_servers, version=table_version, chip=chip))
    if refusal:
        raise ClusterSpecError(refusal)
    try:
        table = build_rank_table(
            job_servers,
            version=table_version,
            order=order,
            chip=chip,
            allow_partial_servers=allow_partial_servers,
            warn=warn,
            **dict(template2 or {}),
        )
    except ClusterSpecError as exc:
        raise _refusal(exc) from exc
    return {"all_servers": all_servers, "job_servers": job_servers, "table": table, "layout": rank_layout(table, job_servers)}
