# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter ``ascend.cluster.restart_plan``; documentation in ``restart_plan.yml``, logic in plugin_utils/_restart."""

from __future__ import annotations

from typing import Any

from ansible_collections.ascend.cluster.plugins.plugin_utils._errors import filter_errors


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

    from ansible_collections.ascend.cluster.plugins.plugin_utils import _restart as restart
    from ansible_collections.ascend.cluster.plugins.plugin_utils._select import plain_copy
    from ansible_collections.ascend.cluster.plugins.plugin_utils._servers import ServersError, server_from_hostvars

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


class FilterModule:
    def filters(self) -> dict:
        return {"restart_plan": restart_plan}
