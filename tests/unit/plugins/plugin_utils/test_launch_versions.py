"""preflight_verdict refuses servers whose NPU firmware, CANN toolkit or kernels differ (issue 26 item 5), as it refuses
different drivers: each kind that differs in one sentence naming every version with its servers, unknown counting as
different, all allowed by ascend_launch_allow_mixed_versions."""

from __future__ import annotations

from typing import Any

from ansible_collections.ascend.cluster.plugins.filter.launch import preflight_verdict
from ansible_collections.ascend.cluster.plugins.plugin_utils._launch import checks
from ansible_collections.ascend.cluster.plugins.plugin_utils._launch.versions import mixed_versions


def server(result: dict) -> dict:
    """A selected server (it holds a rank) with its registered pre-flight result."""
    return {"ascend_local_ranks": [{"rank_id": 0, "device_id": 0}], "_ascend_preflight": result}


def pre(**result: Any) -> dict:
    """A server's pre-flight result with every version the module returns."""
    versions = {
        "npu_smi_version": "24.1.0",
        "firmware_version": "7.1.0.4.218",
        "cann_toolkit_version": "8.3.RC2",
        "cann_kernels_version": "8.3.RC2",
    }
    return {"changed": False, "busy": [], **versions, **result}


def refusal(*results: dict, **kwargs: Any) -> str:
    hostvars = {f"h{i + 1}": server(result) for i, result in enumerate(results)}
    return preflight_verdict(list(hostvars), hostvars, **kwargs)["refusal"]


def test_same_versions_everywhere_go_on():
    assert refusal(pre(), pre(), pre()) == ""
    # kernels installed nowhere agree
    assert refusal(pre(cann_kernels_version="not installed"), pre(cann_kernels_version="not installed")) == ""


def test_mixed_firmware_is_refused_naming_each_version_with_its_servers():
    text = refusal(pre(firmware_version="6.2.1.0"), pre(), pre())
    assert text == (
        "launch refused, nothing was started: the servers run different NPU firmware versions: 7.1.0.4.218 on h2, h3; "
        "6.2.1.0 on h1. Ranks on different firmware or CANN fail or train differently: install one NPU firmware everywhere "
        "(the one released with the driver), or allow it with ascend_launch_allow_mixed_versions=true"
    )
    assert refusal(pre(firmware_version="6.2.1.0"), pre(), allow_mixed_versions=True) == ""


def test_an_unknown_firmware_counts_as_different_and_says_why():
    text = refusal(pre(), pre(firmware_version=None))
    assert text.startswith(
        "launch refused, nothing was started: the servers run different NPU firmware versions: 7.1.0.4.218 on h1; unknown on h2."
    )
    assert text.endswith(
        "(an unknown version counts as a different one: npu-smi info -t board -i <NPU> printed no Firmware Version on h2 "
        "(npu-smi not read, or NA, which some boards print to a non-root user); read it there as root, or check npu-smi and the firmware)"
    )


def test_mixed_cann_toolkit_and_kernels_are_refused_in_one_message():
    text = refusal(pre(cann_toolkit_version="8.3.RC1", cann_kernels_version="not installed"), pre())
    assert text == (
        "launch refused, nothing was started: the servers run different CANN toolkit versions: 8.3.RC1 on h1; 8.3.RC2 on h2. "
        "Ranks on different firmware or CANN fail or train differently: install one CANN toolkit everywhere, or allow it with "
        "ascend_launch_allow_mixed_versions=true. The servers run different CANN kernels versions: 8.3.RC2 on h2; not installed "
        "on h1. Ranks on different firmware or CANN fail or train differently: install the same CANN kernels (ops) package "
        "everywhere, the toolkit's release, or allow it with ascend_launch_allow_mixed_versions=true"
    )


def test_an_unknown_toolkit_names_the_files_it_looked_for():
    text = refusal(pre(), pre(cann_toolkit_version=None))
    assert "the servers run different CANN toolkit versions: 8.3.RC2 on h1; unknown on h2." in text
    assert "no CANN toolkit version file (ascend-toolkit/latest/<arch>-linux/ascend_toolkit_install.info" in text
    assert "point ascend_cann_dir at its install directory" in text


def test_the_driver_comes_first_and_keeps_its_sentence_and_the_firmware_follows():
    text = refusal(pre(npu_smi_version="23.0.rc2", firmware_version="6.2.1.0"), pre())
    driver = checks.MIXED.format(mixed="the servers run different npu-smi (driver) versions: 23.0.rc2 on h1; 24.1.0 on h2")
    assert text.startswith(driver + ". The servers run different NPU firmware versions: 6.2.1.0 on h1; 7.1.0.4.218 on h2. ")
    assert refusal(pre(npu_smi_version="23.0.rc2"), pre()) == driver  # the driver alone reads as before


def test_a_result_without_a_version_key_is_left_out_of_that_comparison():
    """Only what a server's pre-flight read is compared (a result registered elsewhere may lack the key)."""
    bare = {"changed": False, "busy": [], "npu_smi_version": "24.1.0"}
    assert refusal(bare, pre()) == ""
    assert mixed_versions({"s0": pre(), "s1": bare}, "NPU firmware version", key="firmware_version") == ""
    assert (
        mixed_versions({"s0": pre(), "s1": pre(firmware_version="")}, "NPU firmware version", key="firmware_version")
        == "the servers run different NPU firmware versions: 7.1.0.4.218 on s0; unknown on s1"
    )
