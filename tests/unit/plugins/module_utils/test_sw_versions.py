"""Firmware and CANN versions (issue 26 item 5): the parsers on recorded outputs, the files' two layouts, the reads.

Recorded outputs (docs/launch.md cites the pages):
- ``npu-smi info -t board -i 0``: the npu-smi reference (Atlas 200I A2, "查询NPU的详细信息", 23.0.RC3 and 24.1.RC3
  pages), with a ``Compatibility`` line where the board prints one, and ``NA`` where a non-root user cannot read it;
- ``ascend_toolkit_install.info``: ``cat`` of the file in public reports (vllm-ascend#4621, an 8.3.RC1.alpha001 setup
  note whose lines are tab-indented);
- ``opp_kernel/version.info`` (the same setup note) and CANN 8.5's ``ascend_ops_install.info``.
"""

from __future__ import annotations

import os

import pytest

from ansible_collections.ascend.cluster.plugins.module_utils._job import preflight
from ansible_collections.ascend.cluster.plugins.module_utils._npu import versions as v
from tests.unit.plugins.module_utils.hccn_fakes import NPU_SMI, FakeModule
from tests.unit.plugins.module_utils.test_npu_smi import INFO_TABLE_A3

BOARD_23 = """        NPU ID                         : 0
        Product Name                   : IT22DMDB02
        Model                          : NA
        Manufacturer                   : Huawei
        Serial Number                  : 025VLB10K7000275
        Software Version               : 23.0.rc3
        Firmware Version               : 6.2.1.0
        Board ID                       : 0x45
        PCB ID                         : B
        BOM ID                         : 1
        Chip Count                     : 1
        Faulty Chip Count              : 0
"""
BOARD_24 = BOARD_23.replace("23.0.rc3", "24.1.RC2").replace("6.2.1.0", "7.1.0.4.218")
# the EP boards add the driver/firmware Compatibility field after the firmware
BOARD_COMPAT = BOARD_24.replace(
    "        Board ID                       : 0x45\n",
    "        Compatibility                  : OK\n        Board ID                       : 0x45\n",
)
# a field npu-smi cannot read here (Firmware Version for a non-root user) prints NA
BOARD_NA = BOARD_24.replace("7.1.0.4.218", "NA")
# tab-indented, as npu-smi info -l is on real servers
BOARD_TABS = "".join("\t" + line.strip() + "\n" for line in BOARD_24.splitlines())

TOOLKIT_INFO = """package_name=Ascend-cann-toolkit
version=8.3.RC2
innerversion=V100R001C23SPC002B210
compatible_version=[V100R001C15],[V100R001C18],[V100R001C19],[V100R001C20],[V100R001C21],[V100R001C23]
arch=x86_64
os=linux
path=/usr/local/Ascend/ascend-toolkit/8.3.RC2/x86_64-linux
"""
TOOLKIT_INFO_TABS = """\tpackage_name=Ascend-cann-toolkit
\tversion=8.3.RC1.alpha001
\tinnerversion=V100R001C23B046
\tcompatible_version=[V100R001C15],[V100R001C18],[V100R001C19],[V100R001C20],[V100R001C21],[V100R001C23]
\tarch=aarch64
\tos=linux
\tpath=/usr/local/Ascend/ascend-toolkit/8.3.RC1.alpha001/aarch64-linux
"""
KERNELS_INFO = """Version=8.3.T5.0.B028
version_dir=8.3.RC1.alpha001
timestamp=20250807_092944934
ops_version=8.3.T5.0.B028
adk_version=8.3.T5.0.B028
required_package_amct_acl_version=">=7.6, <=8.3"
required_package_toolkit_version=">=7.6, <=8.3"
"""
OPS_INFO = """package_name=Ascend-cann-950-ops
version=9.2.0-beta.2
arch=aarch64
os=linux
path=/usr/local/Ascend/cann-9.2.0-beta.2
"""


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (BOARD_23, "6.2.1.0"),
        (BOARD_24, "7.1.0.4.218"),
        (BOARD_COMPAT, "7.1.0.4.218"),
        (BOARD_TABS, "7.1.0.4.218"),
        (BOARD_NA, None),
        ("", None),
        ("        NPU ID                         : 0\n", None),
    ],
    ids=["23.0.rc3", "24.1.RC2", "with Compatibility", "tab-indented", "NA", "nothing", "no firmware field"],
)
def test_the_board_query_gives_the_firmware(raw, expected):
    assert v.parse_board_firmware(raw) == expected


def test_the_toolkit_and_kernels_files_give_their_versions():
    assert v.toolkit_version(TOOLKIT_INFO) == "8.3.RC2"
    assert v.toolkit_version(TOOLKIT_INFO_TABS) == "8.3.RC1.alpha001"
    assert v.toolkit_version("package_name=Ascend-cann-toolkit\nversion=\n") is None
    # the release is version_dir (what the install guide names), not Version (the build)
    assert v.kernels_version(KERNELS_INFO) == "8.3.RC1.alpha001"
    assert v.kernels_version("Version=8.0.RC3\n") == "8.0.RC3"  # a file without version_dir
    assert v.kernels_version(OPS_INFO) == "9.2.0-beta.2"  # CANN 8.5's ops package
    assert v.parse_key_values(KERNELS_INFO)["required_package_toolkit_version"] == ">=7.6, <=8.3"


def put(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def test_read_cann_reads_the_toolkit_layout_then_cann_85s(tmp_path):
    base = str(tmp_path / "Ascend")
    assert v.read_cann(base, arch="aarch64") == {"cann_toolkit_version": None, "cann_kernels_version": v.NOT_INSTALLED}
    # CANN 8.5: /usr/local/Ascend/cann/<arch>-linux/, the kernels became the ops package
    put(os.path.join(base, "cann", "aarch64-linux", "ascend_toolkit_install.info"), TOOLKIT_INFO.replace("8.3.RC2", "8.5.0"))
    assert v.read_cann(base, arch="aarch64") == {"cann_toolkit_version": "8.5.0", "cann_kernels_version": v.NOT_INSTALLED}
    put(os.path.join(base, "cann", "aarch64-linux", "ascend_ops_install.info"), OPS_INFO)
    assert v.read_cann(base, arch="aarch64")["cann_kernels_version"] == "9.2.0-beta.2"
    # the ascend-toolkit layout (whose set_env.sh a rank sources by default) comes first
    put(os.path.join(base, "ascend-toolkit", "latest", "aarch64-linux", "ascend_toolkit_install.info"), TOOLKIT_INFO_TABS)
    put(os.path.join(base, "ascend-toolkit", "latest", "opp_kernel", "version.info"), KERNELS_INFO)
    assert v.read_cann(base, arch="aarch64") == {"cann_toolkit_version": "8.3.RC1.alpha001", "cann_kernels_version": "8.3.RC1.alpha001"}
    # another architecture's files are not this server's
    assert v.read_cann(base, arch="x86_64")["cann_toolkit_version"] is None


def test_the_default_install_directories():
    assert v.install_dirs("/opt/ascend") == ["/opt/ascend"]
    dirs = v.install_dirs(None)
    assert dirs[0] == "/usr/local/Ascend"
    assert dirs[1:] == ([] if os.geteuid() == 0 else [os.path.join(os.path.expanduser("~"), "Ascend")])


@pytest.mark.parametrize(
    ("by_npu", "expected"),
    [
        ({0: "7.1.0.4.218", 1: "7.1.0.4.218"}, "7.1.0.4.218"),
        ({0: "7.1.0.4.218", 1: None}, None),
        ({}, None),
        ({0: "7.1.0.4.218", 1: "6.2.1.0", 2: "7.1.0.4.218"}, "7.1.0.4.218 (NPU 0, 2) / 6.2.1.0 (NPU 1)"),
    ],
)
def test_one_servers_firmware(by_npu, expected):
    assert v.firmware_summary(by_npu) == expected


def test_read_firmware_asks_each_npus_board_once():
    calls = []
    outputs = {"0": (0, BOARD_24, ""), "1": (0, BOARD_NA, ""), "2": (3, "", "the device does not exist")}

    def runner(argv, timeout=None):
        calls.append(argv)
        return outputs[argv[-1]]

    found = v.read_firmware(None, "/usr/local/sbin/npu-smi", [2, 0, 1, 0], runner=runner)  # type: ignore[arg-type]
    assert found == {0: "7.1.0.4.218", 1: None, 2: None}
    assert sorted(calls) == [["/usr/local/sbin/npu-smi", "info", "-t", "board", "-i", str(n)] for n in (0, 1, 2)]


def test_the_preflight_reads_the_boards_of_the_selected_devices_npus(tmp_path):
    """On A3 a device is a die: device 3 is NPU 1's second die, whose board alone is asked (not NPU 0's, nor NPU 3's)."""
    fake = FakeModule(params={"npu_smi": None}, bins={"npu-smi": NPU_SMI})
    fake.transcript[(NPU_SMI, "info")] = (0, INFO_TABLE_A3, "")
    for npu in range(8):
        fake.transcript[(NPU_SMI, "info", "-t", "board", "-i", str(npu))] = (0, BOARD_24, "")
    info, problem = preflight.read_npu(fake, None, runner=fake.run_tool)
    assert problem is None
    found = preflight.read_versions(fake, None, info, [3], str(tmp_path), runner=fake.run_tool)
    assert found.pop("version_fit")["problems"] == []  # no version file to compare (tests/unit/corpus: the fit on real files)
    assert found == {"firmware_version": "7.1.0.4.218", "cann_toolkit_version": None, "cann_kernels_version": v.NOT_INSTALLED}
    assert [c[-1] for c in fake.calls if "board" in c] == ["1"]
    # npu-smi not read: the firmware is unknown, CANN is read all the same
    put(os.path.join(str(tmp_path), "ascend-toolkit", "latest", "opp_kernel", "version.info"), KERNELS_INFO)
    found = preflight.read_versions(fake, None, None, [3], str(tmp_path), runner=fake.run_tool)
    found.pop("version_fit")
    assert found == {"firmware_version": None, "cann_toolkit_version": None, "cann_kernels_version": "8.3.RC1.alpha001"}
