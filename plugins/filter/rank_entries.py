# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter ``ascend.cluster.rank_entries``; documentation in ``rank_entries.yml``."""

from __future__ import annotations

from typing import Any

from ansible_collections.ascend.cluster.plugins.plugin_utils._errors import filter_errors


@filter_errors("rank_entries")
def rank_entries(table: Any, server_id: str | None = None) -> list:
    """Flatten any supported rank table into rank-ordered entries (optionally one server's)."""
    # imported when called, not when Ansible loads the file (docs/contracts.md, filter files)
    from ansible_collections.ascend.cluster.plugins.plugin_utils._chip_rules import resolve_chip
    from ansible_collections.ascend.cluster.plugins.plugin_utils._rank_table_formats import parse

    _version, servers = parse(table, resolve_chip(None))
    entries: list[dict[str, Any]] = [
        {
            "rank_id": device.rank_id,
            "device_id": device.device_id,
            "device_ip": device.device_ip,
            "server_id": server.server_id,
            "local_index": index,
            "local_count": len(server.devices),
        }
        for server in servers
        for index, device in enumerate(sorted(server.devices, key=lambda d: d.rank_id))
    ]
    entries.sort(key=lambda e: e["rank_id"])
    if server_id is not None:
        entries = [e for e in entries if e["server_id"] == str(server_id)]
    return entries


class FilterModule:
    def filters(self) -> dict:
        return {"rank_entries": rank_entries}
