"""Filter tool_paths: the one place of "a tool path variable unset or empty: the module searches"."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.ascend.cluster.plugins.filter.common import tool_paths


@pytest.mark.parametrize(
    "host_vars, kwargs, expected",
    [
        ({}, {}, {}),
        ({"ascend_hccn_tool": "/opt/bin/hccn_tool"}, {}, {"hccn_tool": "/opt/bin/hccn_tool"}),
        (  # empty and blank are unset: the module searches
            {"ascend_hccn_tool": "", "ascend_npu_smi": "  ", "ascend_hccn_conf": None, "ascend_cann_dir": "/x"},
            {},
            {},
        ),
        (
            {"ascend_hccn_tool": "h", "ascend_npu_smi": "n", "ascend_hccn_conf": "/etc/c", "ascend_cann_dir": "/usr/local/Ascend"},
            {},
            {"hccn_tool": "h", "npu_smi": "n", "hccn_conf": "/etc/c"},
        ),
        ({"ascend_cann_dir": "/usr/local/Ascend", "other": 1}, {"cann_dir": True}, {"cann_dir": "/usr/local/Ascend"}),
    ],
    ids=["nothing set", "one tool", "empty is unset", "cann_dir only when asked", "cann_dir"],
)
def test_tool_paths(host_vars, kwargs, expected):
    assert tool_paths(host_vars, **kwargs) == expected


def test_not_a_hosts_variables():
    with pytest.raises(AnsibleFilterError, match=r"must be a host's variables \(hostvars\[inventory_hostname\]\)"):
        tool_paths(["ascend_hccn_tool"])
