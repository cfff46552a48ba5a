"""Every version file of the corpus (tests/corpus/versions) read by ``_npu.versions``, asserting the values its index
lists, and the one-server fit check on files published together."""

from __future__ import annotations

import os

import pytest

from ansible_collections.ascend.cluster.plugins.module_utils._npu import versions as v
from tests.helpers import corpus

CORPUS = str(corpus.CORPUS)


def of_kind(kind) -> list:
    """``pytest.param(entry, text)`` of every version file whose ``command`` ``kind`` accepts."""
    return [pytest.param(e, corpus.text("versions", e), id=e["file"]) for e in corpus.index("versions") if kind(e["command"])]


DRIVERS = of_kind(lambda command: command.endswith("/driver/version.info"))
FIRMWARE = of_kind(lambda command: command.endswith("/firmware/version.info"))
CANN = of_kind(lambda command: command.endswith("_install.info") and "/etc/" not in command)
INSTALL = of_kind(lambda command: command.endswith("/etc/ascend_install.info"))


def _value(fields: dict, key: str):
    return fields[key][0] if key in fields else None


def _items(value):
    return [list(item) for item in v.compat_items(value)]


@pytest.mark.parametrize(("entry", "raw"), DRIVERS)
def test_every_driver_version_file_reads_its_versions_and_what_it_works_with(entry, raw):
    fields, expect = v.parse_version_info(raw), entry["expect"]
    assert _value(fields, "Version") == expect["version"]
    assert _value(fields, "Innerversion") == expect["innerversion"]
    assert _items(_value(fields, "compatible_version")) == expect["compatible_version"]
    assert _items(_value(fields, "compatible_version_fw")) == expect["compatible_version_fw"]
    assert _value(fields, "package_version") == expect["package_version"]


@pytest.mark.parametrize(("entry", "raw"), FIRMWARE)
def test_every_firmware_version_file_reads_its_version_and_drivers(entry, raw):
    fields, expect = v.parse_version_info(raw), entry["expect"]
    assert _value(fields, "Version") == expect["version"]
    assert _items(_value(fields, "compatible_version_drv")) == expect["compatible_version_drv"]
    assert _value(fields, "package_version") == expect["package_version"]


@pytest.mark.parametrize(("entry", "raw"), CANN)
def test_every_cann_install_info_reads_its_version_release_and_drivers(entry, raw):
    expect = entry["expect"]
    fields = v.parse_version_info(raw)
    assert v.toolkit_version(raw) == expect["version"]
    assert list(v.inner_code(_value(fields, "innerversion")) or ()) == expect["innerversion"]
    assert _items(_value(fields, "compatible_version")) == expect["compatible_version"]


@pytest.mark.parametrize(("entry", "raw"), INSTALL)
def test_every_install_info_names_the_driver_and_firmware_directories(entry, raw):
    assert v.install_paths(os.path.join(CORPUS, "versions", entry["file"])) == entry["expect"]


def _package(name: str):
    path = os.path.join(CORPUS, "versions", name)
    with open(path, encoding="utf-8") as f:
        return (path, v.parse_version_info(f.read()))


def _board(name: str) -> dict:
    with open(os.path.join(CORPUS, "npu_smi", name), encoding="utf-8") as f:
        return v.parse_board(f.read())


def test_the_files_of_one_real_server_fit_together():
    """Driver 23.0.7, firmware 7.1.0.11.220 and CANN 7.0.T10 as one capture shows them (MindCluster's test data): the
    driver's compatible_version_fw holds the firmware, its compatible_version the toolkit's release (C13)."""
    packages = {
        "driver": _package("driver_version_23.0.7_faultdiag.info"),
        "firmware": _package("firmware_version_7.1.0.11.220_faultdiag.info"),
        "toolkit": _package("toolkit_7.0.T10_faultdiag.info"),
    }
    assert v.fit(packages, {0: _board("board_910a_d801_23.0.5_tabs.txt")}) == {"problems": [], "unknown": []}


@pytest.mark.parametrize(
    "driver,toolkit",
    [
        # a newer CANN lists the older driver: 8.5.0 names C15, the driver 24.1.rc1's release
        ("driver_version_24.1.rc1_doc_faultdiag.info", "toolkit_8.5.0_cann_layout_doc_faultdiag.info"),
        # an older CANN the newer driver lists: driver 24.1.rc1 names C17, CANN 8.0.RC1's release
        ("driver_version_24.1.rc1_doc_faultdiag.info", "toolkit_8.0.RC1_vllm-ascend-152.info"),
        ("driver_version_23.0.7_faultdiag.info", "toolkit_8.3.RC2_vllm-ascend-4989.info"),
    ],
)
def test_a_driver_and_a_cann_that_list_each_other_either_way_fit(driver, toolkit):
    found = v.fit({"driver": _package(driver), "firmware": None, "toolkit": _package(toolkit)})
    assert found["problems"] == []


def test_a_driver_and_a_cann_that_list_neither_the_other_are_a_problem_naming_both_lines():
    """Driver 23.0.7 (C15, listing C29, C30, C13, C15) and the CANN 8.1.RC1.alpha001 toolkit (C21, listing C15..C21):
    the toolkit lists C15, so they fit; CANN 8.0.0 (C20; lists C15-C20) too. No published pair fails, so the failing one
    is 8.1.T18's list with the 23.0.7 driver's Innerversion moved to C13 - the lines named are the files' own."""
    driver = _package("driver_version_23.0.7_faultdiag.info")
    assert v.fit({"driver": driver, "firmware": None, "toolkit": _package("toolkit_8.1.T18_vllm-ascend-1427.info")})["problems"] == []
    older = (driver[0], dict(driver[1], Innerversion=("V100R001C13SPC001B100", "Innerversion=V100R001C13SPC001B100")))
    problems = v.fit({"driver": older, "firmware": None, "toolkit": _package("toolkit_8.1.T18_vllm-ascend-1427.info")})["problems"]
    assert len(problems) == 1
    assert "compatible_version=[V100R001C29],[V100R001C30],[V100R001C13],[V100R001C15]" in problems[0]
    assert "innerversion=V100R001C21SPC001B229" in problems[0] and "Innerversion=V100R001C13SPC001B100" in problems[0]


def test_firmware_outside_the_drivers_range_and_a_board_that_says_nok_are_problems():
    """The 23.0.RC3 reference board's firmware 6.2.1.0 is outside driver 23.0.7's [7.0.0,7.1.99]; a board printing
    ``Compatibility : NOK`` (the reference's value for a driver that does not work with its firmware) is refused."""
    firmware = (
        "/usr/local/Ascend/firmware/version.info",
        {"Version": ("6.2.1.0", "Version=6.2.1.0")},
    )
    found = v.fit({"driver": _package("driver_version_23.0.7_faultdiag.info"), "firmware": firmware, "toolkit": None})
    assert len(found["problems"]) == 1 and "compatible_version_fw=[7.0.0,7.1.99]" in found["problems"][0]
    assert found["unknown"] == ["the CANN toolkit's install info was not found"]
    with open(os.path.join(CORPUS, "npu_smi", "board_910a_d801_23.0.5_tabs.txt"), encoding="utf-8") as f:
        nok = v.parse_board(f.read().replace(": OK", ": NOK"))
    problems = v.fit({"driver": None, "firmware": None, "toolkit": None}, {3: nok})["problems"]
    assert problems == [
        "npu-smi info -t board -i 3 reports the NPU driver and firmware incompatible ('Compatibility                  : NOK')"
    ]


def test_the_versions_corpus_covers_every_file_the_collection_reads():
    assert len(DRIVERS) >= 2 and FIRMWARE and len(CANN) >= 6 and INSTALL
    assert len(corpus.index("versions")) == len(DRIVERS) + len(FIRMWARE) + len(CANN) + len(INSTALL)
