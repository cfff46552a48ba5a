# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The firewall role's filter: every host's firewall result as the table's rows.

Filters ``ascend.cluster.firewall_rows``; each documented in the YAML file of its name beside this one."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ansible_collections.ascend.cluster.plugins.plugin_utils._errors import ClusterSpecError, filter_errors


@filter_errors("firewall_rows")
def firewall_rows(hosts: Any, result_var: str = "_ascend_firewall_result") -> list:
    """One ``{host, mode, found, action}`` row per host from its registered host_firewall result."""
    # imported when called, not when Ansible loads the file (docs/contracts.md, filter files)
    from ansible_collections.ascend.cluster.plugins.module_utils._host.firewall import NOT_CHECKED

    rows = []
    for index, item in enumerate(hosts or ()):
        if not isinstance(item, Mapping) or not item.get("inventory_hostname"):
            raise ClusterSpecError(f"entry {index} is not a host's variables (no inventory_hostname): {item!r}")
        result = item.get(result_var)
        result = result if isinstance(result, Mapping) else {}
        rows.append({"host": str(item["inventory_hostname"]), **{key: result.get(key, empty) for key, empty in NOT_CHECKED.items()}})
    return rows


# Every filter of this file, registered under its function's name (the name its YAML documentation has).
FILTERS = (firewall_rows,)


class FilterModule:
    def filters(self) -> dict:
        return {function.__name__: function for function in FILTERS}
