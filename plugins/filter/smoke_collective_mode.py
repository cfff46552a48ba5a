# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter ``ascend.cluster.smoke_collective_mode``; documentation in ``smoke_collective_mode.yml``."""

from __future__ import annotations

from typing import Any

from ansible_collections.ascend.cluster.plugins.plugin_utils._errors import filter_errors


@filter_errors("smoke_collective_mode")
def smoke_collective_mode(requested: Any, found: Any, **kwargs: Any) -> dict:
    # imported when called, not when Ansible loads the file (docs/contracts.md, filter files)
    from ansible_collections.ascend.cluster.plugins.plugin_utils._hccl_test import choose_mode

    return choose_mode(str(requested), found, **kwargs)


class FilterModule:
    def filters(self) -> dict:
        return {"smoke_collective_mode": smoke_collective_mode}
