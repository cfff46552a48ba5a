# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter ``ascend.cluster.missing_device_ips``; documentation in ``missing_device_ips.yml``, logic in plugin_utils."""

from __future__ import annotations

from typing import Any

from ansible_collections.ascend.cluster.plugins.plugin_utils._errors import filter_errors


@filter_errors("missing_device_ips")
def missing_device_ips(servers: Any, version: Any = None, chip: str | None = None) -> dict:
    # imported when called, not when Ansible loads the file (docs/contracts.md, filter files)
    from ansible_collections.ascend.cluster.plugins.plugin_utils._rank_table import missing_device_ips as _missing_device_ips

    return _missing_device_ips(servers, version=version, chip=chip)


class FilterModule:
    def filters(self) -> dict:
        return {"missing_device_ips": missing_device_ips}
