# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter ``ascend.cluster.tool_paths``; documentation in ``tool_paths.yml``, logic in plugin_utils."""

from __future__ import annotations

from typing import Any

from ansible_collections.ascend.cluster.plugins.plugin_utils._errors import filter_errors


@filter_errors("tool_paths")
def tool_paths(host_vars: Any, cann_dir: bool = False) -> dict:
    # imported when called, not when Ansible loads the file (docs/contracts.md, filter files)
    from ansible_collections.ascend.cluster.plugins.plugin_utils._tool_paths import tool_paths as _tool_paths

    return _tool_paths(host_vars, cann_dir=cann_dir)


class FilterModule:
    def filters(self) -> dict:
        return {"tool_paths": tool_paths}
