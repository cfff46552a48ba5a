# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The per-rank rows the launch prints (the report after a watched job, status.yml's table).

Each server's task registered one result with a ``ranks`` list (``training_watch`` or
``training_job state=status``); the rows are every server's ranks, each named with its server
(the address the watch reported, else the inventory name), in rank order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ansible_collections.ascend.cluster.plugins.plugin_utils._errors import ClusterSpecError

LAST_LINE_CHARS = 60


def rank_rows(hosts: Sequence[str], hostvars: Mapping[str, Any], result: str) -> list[dict[str, Any]]:
    """Every rank of the ``result`` each host registered, with ``server``, ``job_id`` and ``last_line``."""
    if isinstance(hosts, (str, Mapping)) or not isinstance(hosts, Sequence):
        raise ClusterSpecError(f"the input must be the play's host names, got {hosts!r}")
    rows = []
    for host in hosts:
        try:
            registered = hostvars[host].get(result)
        except KeyError as exc:
            raise ClusterSpecError(f"host {host!r} is not in hostvars") from exc
        if not isinstance(registered, Mapping):
            continue  # the host did not take part, or its task did not run
        for rank in registered.get("ranks") or []:
            tail = rank.get("tail") or [""]
            rows.append(
                dict(
                    rank,
                    server=registered.get("server") or host,
                    job_id=registered.get("job_id"),
                    last_line=str(tail[-1])[-LAST_LINE_CHARS:],
                )
            )
    return sorted(rows, key=lambda row: int(row["rank_id"]))
