# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter ``ascend.cluster.input_problems``; documentation in ``input_problems.yml``."""

from __future__ import annotations

from typing import Any

from ansible_collections.ascend.cluster.plugins.plugin_utils._errors import filter_errors


@filter_errors("input_problems")
def input_problems(given: Any, declared: Any, hosts: Any = None, pattern: Any = None, present: Any = ()) -> list:
    # imported when called, not when Ansible loads the file (docs/contracts.md, filter files)
    from ansible_collections.ascend.cluster.plugins.plugin_utils._inputs import input_problems as _input_problems

    return _input_problems(given, declared, hosts=hosts, pattern=pattern, present=present or ())


class FilterModule:
    def filters(self) -> dict:
        return {"input_problems": input_problems}
