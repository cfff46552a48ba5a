# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter ``ascend.cluster.launcher_args_refusal``; documentation in ``launcher_args_refusal.yml``, logic in module_utils."""

from __future__ import annotations

from typing import Any

from ansible_collections.ascend.cluster.plugins.plugin_utils._errors import filter_errors


@filter_errors("launcher_args_refusal")
def launcher_args_refusal(args: Any, launcher: str = "per_device") -> str:
    # imported when called, not when Ansible loads the file (docs/contracts.md, filter files)
    from ansible_collections.ascend.cluster.plugins.module_utils._launcher_args import refusals

    return "; ".join(refusals(str(launcher), list(args or [])))


class FilterModule:
    def filters(self) -> dict:
        return {"launcher_args_refusal": launcher_args_refusal}
