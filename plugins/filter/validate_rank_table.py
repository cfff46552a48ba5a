# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter ``ascend.cluster.validate_rank_table``; documentation in ``validate_rank_table.yml``."""

from __future__ import annotations

from typing import Any

from ansible_collections.ascend.cluster.plugins.plugin_utils._errors import filter_errors


@filter_errors("validate_rank_table")
def validate_rank_table(table: Any, chip: str | None = None, allow_partial_servers: bool = False, version: Any = None) -> dict:
    # imported when called, not when Ansible loads the file (docs/contracts.md, filter files)
    from ansible_collections.ascend.cluster.plugins.plugin_utils._rank_table import validate_rank_table as _validate

    return _validate(table, chip=chip, allow_partial_servers=allow_partial_servers, version=version)


class FilterModule:
    def filters(self) -> dict:
        return {"validate_rank_table": validate_rank_table}
