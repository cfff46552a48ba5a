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
    from ansible_collections.ascend.cluster.plugins.plugin_utils._rank_layout import entries as _entries

    entries = _entries(table)
    if server_id is not None:
        entries = [e for e in entries if e["server_id"] == str(server_id)]
    return entries


class FilterModule:
    def filters(self) -> dict:
        return {"rank_entries": rank_entries}
