# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter ``ascend.cluster.gate_margin``; documentation in ``gate_margin.yml``."""

from __future__ import annotations

from typing import Any

from ansible_collections.ascend.cluster.plugins.plugin_utils._errors import filter_errors


@filter_errors("gate_margin")
def gate_margin(servers: Any, forks: Any = 5, clocks: Any = None, cores: Any = None, load: Any = None) -> float:
    # imported when called, not when Ansible loads the file (docs/contracts.md, filter files)
    from ansible_collections.ascend.cluster.plugins.plugin_utils._gate import gate_margin as _gate_margin

    return _gate_margin(servers, forks, clocks=clocks, cores=cores, load=load)


class FilterModule:
    def filters(self) -> dict:
        return {"gate_margin": gate_margin}
