# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The smoke_check role's filters: the collective stage's mode and commands, the findings' table.

Filters ``ascend.cluster.smoke_collective_mode``, ``ascend.cluster.hccl_test_binaries``,
``ascend.cluster.hccl_test_plan``, ``ascend.cluster.smoke_report``, ``ascend.cluster.smoke_summary``; each documented in
the YAML file of its name beside this one."""

from __future__ import annotations

from typing import Any

from ansible_collections.ascend.cluster.plugins.plugin_utils._errors import filter_errors


@filter_errors("smoke_collective_mode")
def smoke_collective_mode(requested: Any, found: Any, **kwargs: Any) -> dict:
    # imported when called, not when Ansible loads the file (docs/contracts.md, filter files)
    from ansible_collections.ascend.cluster.plugins.plugin_utils._net.hccl_test import choose_mode

    return choose_mode(str(requested), found, **kwargs)


@filter_errors("hccl_test_binaries")
def hccl_test_binaries(cann_dir: Any) -> list:
    # imported when called, not when Ansible loads the file (docs/contracts.md, filter files)
    from ansible_collections.ascend.cluster.plugins.plugin_utils._net.hccl_test import binary_paths

    return binary_paths(str(cann_dir or ""))


@filter_errors("hccl_test_plan")
def hccl_test_plan(job_servers: Any, host: Any, **kwargs: Any) -> dict:
    # imported when called, not when Ansible loads the file (docs/contracts.md, filter files)
    from ansible_collections.ascend.cluster.plugins.plugin_utils._net.hccl_test import plan

    return plan(job_servers, str(host), **kwargs)


@filter_errors("smoke_report")
def smoke_report(hosts: Any, hostvars: Any, **kwargs: Any) -> dict:
    # imported when called, not when Ansible loads the file (docs/contracts.md, filter files)
    from ansible_collections.ascend.cluster.plugins.plugin_utils._net.smoke import smoke_report as _smoke_report

    return _smoke_report(hosts, hostvars, **kwargs)


@filter_errors("smoke_summary")
def smoke_summary(ranks: Any, health: Any = None, stages: Any = (), launched: bool = True) -> dict:
    # imported when called, not when Ansible loads the file (docs/contracts.md, filter files)
    from ansible_collections.ascend.cluster.plugins.plugin_utils._net.smoke import smoke_summary as _smoke_summary

    return _smoke_summary(ranks, health=health, stages=stages, launched=launched)


# Every filter of this file, registered under its function's name (the name its YAML documentation has).
FILTERS = (smoke_collective_mode, hccl_test_binaries, hccl_test_plan, smoke_report, smoke_summary)


class FilterModule:
    def filters(self) -> dict:
        return {function.__name__: function for function in FILTERS}
