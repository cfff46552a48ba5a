# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter ``ascend.cluster.mixed_versions``; documentation in ``mixed_versions.yml``, logic in plugin_utils."""

from __future__ import annotations

from typing import Any

from ansible_collections.ascend.cluster.plugins.plugin_utils._errors import filter_errors


@filter_errors("mixed_versions")
def mixed_versions(versions: Any, what: str = "npu-smi (driver) version", key: str = "npu_smi_version") -> str:
    # imported when called, not when Ansible loads the file (docs/contracts.md, filter files)
    from ansible_collections.ascend.cluster.plugins.plugin_utils._versions import mixed_versions as _mixed_versions

    return _mixed_versions(versions, what=what, key=key)


class FilterModule:
    def filters(self) -> dict:
        return {"mixed_versions": mixed_versions}
