# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter ``ascend.cluster.ping_mesh_targets``; documentation in ``ping_mesh_targets.yml``, logic in plugin_utils."""

from __future__ import annotations

from typing import Any

from ansible_collections.ascend.cluster.plugins.plugin_utils._errors import ClusterSpecError, filter_errors


@filter_errors("ping_mesh_targets")
def ping_mesh_targets(servers: Any, host: str, mode: str = "sampled") -> list:
    # imported when called, not when Ansible loads the file (docs/contracts.md, filter files)
    from ansible_collections.ascend.cluster.plugins.plugin_utils._net_health import server_facts
    from ansible_collections.ascend.cluster.plugins.plugin_utils._ping_mesh import ping_targets

    if isinstance(servers, (str, dict)) or not isinstance(servers, (list, tuple)):
        raise ClusterSpecError("the input must be a list of hosts' variables (ansible_play_hosts | map('extract', hostvars))")
    pairs = []
    for index, item in enumerate(servers):
        name, npu = server_facts(item, index)
        pairs.append((name, npu.get("devices") or []))
    return ping_targets(pairs, host, mode)


class FilterModule:
    def filters(self) -> dict:
        return {"ping_mesh_targets": ping_mesh_targets}
