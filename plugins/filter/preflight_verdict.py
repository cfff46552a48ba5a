# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter ``ascend.cluster.preflight_verdict``; documentation in ``preflight_verdict.yml``, logic in plugin_utils."""

from __future__ import annotations

from typing import Any

from ansible_collections.ascend.cluster.plugins.plugin_utils._errors import filter_errors


@filter_errors("preflight_verdict")
def preflight_verdict(
    hosts: Any,
    hostvars: Any,
    result: str = "_ascend_preflight",
    aoe: bool = False,
    use_library: bool | None = None,
    allow_mixed_versions: bool = False,
) -> dict:
    # imported when called, not when Ansible loads the file (docs/contracts.md, filter files)
    from ansible.utils.display import Display

    from ansible_collections.ascend.cluster.plugins.plugin_utils._launch_checks import preflight_verdict as _preflight_verdict

    verdict = _preflight_verdict(
        hosts, hostvars, result=result, aoe=aoe, use_library=use_library, allow_mixed_versions=allow_mixed_versions
    )
    for warning in verdict["warnings"]:  # each on its own line, naming its server
        Display().warning(warning)
    return verdict


class FilterModule:
    def filters(self) -> dict:
        return {"preflight_verdict": preflight_verdict}
