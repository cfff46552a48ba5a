# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter ``ascend.cluster.hccl_test_plan``; documentation in ``hccl_test_plan.yml``."""

from __future__ import annotations

from typing import Any

from ansible_collections.ascend.cluster.plugins.plugin_utils._errors import filter_errors


@filter_errors("hccl_test_plan")
def hccl_test_plan(job_servers: Any, host: Any, **kwargs: Any) -> dict:
    # imported when called, not when Ansible loads the file (docs/contracts.md, filter files)
    from ansible_collections.ascend.cluster.plugins.plugin_utils._hccl_test import plan

    return plan(job_servers, str(host), **kwargs)


class FilterModule:
    def filters(self) -> dict:
        return {"hccl_test_plan": hccl_test_plan}
