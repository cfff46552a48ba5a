# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter ``ascend.cluster.device_range``; documentation in ``device_range.yml``."""

from __future__ import annotations

from typing import Any

from ansible_collections.ascend.cluster.plugins.plugin_utils._errors import filter_errors


@filter_errors("device_range")
def device_range(spec: Any, chip: str | None = None) -> list:
    # imported when called, not when Ansible loads the file (docs/contracts.md, filter files)
    from ansible_collections.ascend.cluster.plugins.plugin_utils._device_spec import parse_device_range

    return parse_device_range(spec, chip=chip)


class FilterModule:
    def filters(self) -> dict:
        return {"device_range": device_range}
