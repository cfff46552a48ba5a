"""mixed_versions: which servers run which driver, when a job's servers differ."""

from __future__ import annotations

import pytest

from ansible_collections.ascend.cluster.plugins.plugin_utils._errors import ClusterSpecError
from ansible_collections.ascend.cluster.plugins.plugin_utils._launch.versions import mixed_versions


@pytest.mark.parametrize(
    "versions, expected",
    [
        ({}, ""),
        ({"s0": "24.1.0", "s1": "24.1.0"}, ""),
        # issue 26 item 4: an unknown version (npu-smi missing, failing, no Version: in its header) is a mismatch
        ({"s0": "24.1.0", "s1": None}, "the servers run different npu-smi (driver) versions: 24.1.0 on s0; unknown on s1"),
        ({"s0": None, "s1": ""}, "the servers run different npu-smi (driver) versions: unknown on s0, s1"),
        ({"s0": None}, ""),  # one server alone has nothing to differ from
        (
            {"s0": "24.1.0", "s1": {"npu_smi_version": None, "npu_smi_status": "allowed"}, "s2": {"skipped": True}},
            ("the servers run different npu-smi (driver) versions: 24.1.0 on s0; unknown on s1"),
        ),
        (
            {"s0": "24.1.0", "s1": "23.0.rc2", "s2": "24.1.0"},
            "the servers run different npu-smi (driver) versions: 24.1.0 on s0, s2; 23.0.rc2 on s1",
        ),
        (
            {"s0": "24.1.0", "s1": "23.0.rc2", "s2": ""},
            "the servers run different npu-smi (driver) versions: 23.0.rc2 on s1; 24.1.0 on s0; unknown on s2",
        ),
        (  # registered pre-flight results; a skipped one (a server without ranks) is left out
            {"s0": {"npu_smi_version": "24.1.0", "changed": False}, "s1": {"skipped": True, "changed": False}},
            "",
        ),
        (
            {"s0": {"npu_smi_version": "24.1.0"}, "s1": {"npu_smi_version": "23.0.rc2"}, "s2": {"skipped": True}},
            "the servers run different npu-smi (driver) versions: 23.0.rc2 on s1; 24.1.0 on s0",
        ),
    ],
)
def test_mixed_versions(versions, expected):
    assert mixed_versions(versions) == expected


def test_not_a_mapping_is_refused():
    with pytest.raises(ClusterSpecError, match="versions must be a mapping of server to version, got list"):
        mixed_versions(["24.1.0"])
    with pytest.raises(ClusterSpecError):
        mixed_versions("24.1.0")
