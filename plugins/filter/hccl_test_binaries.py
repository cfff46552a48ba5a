# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter ``ascend.cluster.hccl_test_binaries``; documentation in ``hccl_test_binaries.yml``."""

from __future__ import annotations

from typing import Any

from ansible_collections.ascend.cluster.plugins.plugin_utils._errors import filter_errors


@filter_errors("hccl_test_binaries")
def hccl_test_binaries(cann_dir: Any) -> list:
    # imported when called, not when Ansible loads the file (docs/contracts.md, filter files)
    from ansible_collections.ascend.cluster.plugins.plugin_utils._hccl_test import binary_paths

    return binary_paths(str(cann_dir or ""))


class FilterModule:
    def filters(self) -> dict:
        return {"hccl_test_binaries": hccl_test_binaries}
