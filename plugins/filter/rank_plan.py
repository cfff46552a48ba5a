# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter ``ascend.cluster.rank_plan``; documentation in ``rank_plan.yml``."""

from __future__ import annotations

from typing import Any

from ansible.module_utils.parsing.convert_bool import boolean
from ansible.utils.display import Display

from ansible_collections.ascend.cluster.plugins.plugin_utils._errors import filter_errors

BOOLEANS = ("spread", "allow_partial_servers")


@filter_errors("rank_plan")
def rank_plan(hosts: Any, **options: Any) -> dict:
    """The play's servers, the job's selection, its rank table and every host's slice, in one call.

    The options are ``plugin_utils._rank_plan.rank_plan``'s (see rank_plan.yml); the booleans are taken as the
    role passes them (strings from extra vars included).
    """
    # imported when called, not when Ansible loads the file (docs/contracts.md, filter files)
    from ansible_collections.ascend.cluster.plugins.plugin_utils._rank_plan import rank_plan as _rank_plan

    for name in BOOLEANS:
        if name in options:
            options[name] = boolean(options[name], strict=True)
    options["npu_env"] = str(options.get("npu_env") or "")
    return _rank_plan(hosts, warn=lambda text: Display().warning(f"rank_table: {text}"), **options)


class FilterModule:
    def filters(self) -> dict:
        return {"rank_plan": rank_plan}
