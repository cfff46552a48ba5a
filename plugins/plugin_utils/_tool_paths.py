# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The driver tools' paths a host's variables give the modules: the one place of the rule "unset or empty: the module searches".

Every module of the ``ascend.cluster.ascend`` action group takes ``hccn_tool``, ``npu_smi`` and ``hccn_conf``
(``module_utils/_options.py`` ``TOOL_PATHS``); ``hccn_facts`` and ``training_job`` also take ``cann_dir``. The
playbooks and roles hand them on from the variables ``ascend_hccn_tool``, ``ascend_npu_smi``, ``ascend_hccn_conf``
and ``ascend_cann_dir`` through ``module_defaults`` (filter ``ascend.cluster.tool_paths``), leaving out each one
that is unset or empty, so that the module searches for the tool and a play's own ``module_defaults`` still apply.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ansible_collections.ascend.cluster.plugins.plugin_utils._errors import ClusterSpecError

VARIABLES = {"hccn_tool": "ascend_hccn_tool", "npu_smi": "ascend_npu_smi", "hccn_conf": "ascend_hccn_conf"}
CANN_DIR = {"cann_dir": "ascend_cann_dir"}


def tool_paths(host_vars: Any, cann_dir: bool = False) -> dict[str, str]:
    """The module options ``host_vars`` (a host's variables: ``hostvars[host]``) set, each only when set and not empty."""
    if not isinstance(host_vars, Mapping):
        raise ClusterSpecError(f"the input must be a host's variables (hostvars[inventory_hostname]), got {type(host_vars).__name__}")
    wanted = dict(VARIABLES, **CANN_DIR) if cann_dir else VARIABLES
    paths = {}
    for option, variable in wanted.items():
        value = host_vars.get(variable)
        if value is not None and str(value).strip():
            paths[option] = str(value)
    return paths
