# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter ``ascend.cluster.missing_superpod_ids``; documentation in ``missing_superpod_ids.yml``, logic in plugin_utils."""

from __future__ import annotations

from typing import Any

from ansible_collections.ascend.cluster.plugins.plugin_utils._errors import filter_errors


@filter_errors("missing_superpod_ids")
def missing_superpod_ids(servers: Any, version: Any = None, chip: str | None = None) -> list:
    # imported when called, not when Ansible loads the file (docs/contracts.md, filter files)
    from ansible_collections.ascend.cluster.plugins.plugin_utils._rank_table import missing_superpod_ids as _missing_superpod_ids

    return _missing_superpod_ids(servers, version=version, chip=chip)


class FilterModule:
    def filters(self) -> dict:
        return {"missing_superpod_ids": missing_superpod_ids}
