"""The simulated firmware and CANN versions: ``npu-smi info -t board -i N`` in the npu-smi reference's layout, the CANN
version files under the host's CANN directory, and ``fault versions`` setting them per server (and per NPU)."""

from __future__ import annotations

import os

from tests.simulator.simhelpers import ASCEND_SIM, run, sim

ARCH = os.uname()[4]
# The npu-smi reference's board query (Atlas 200I A2, "查询NPU的详细信息"): 8 spaces, the name padded to 31 columns.
BOARD_910B_NPU3 = (
    "        NPU ID                         : 3\n"
    "        Product Name                   : NA\n"
    "        Model                          : NA\n"
    "        Manufacturer                   : Huawei\n"
    "        Serial Number                  : NA\n"
    "        Software Version               : 24.1.0\n"
    "        Firmware Version               : 7.1.0.4.218\n"
    "        Board ID                       : NA\n"
    "        PCB ID                         : NA\n"
    "        BOM ID                         : NA\n"
    "        Chip Count                     : 1\n"
    "        Faulty Chip Count              : 0\n"
)


def toolkit_file(cann):
    return cann / "ascend-toolkit" / "latest" / f"{ARCH}-linux" / "ascend_toolkit_install.info"


def kernels_file(cann):
    return cann / "ascend-toolkit" / "latest" / "opp_kernel" / "version.info"


def test_the_board_query_prints_the_reference_layout(host):
    proc = host.npu_smi("info", "-t", "board", "-i", "3")
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, BOARD_910B_NPU3, "")
    host.fault("npu-smi-version", "--version", "23.0.rc2")  # Software Version is the driver's
    assert "        Software Version               : 23.0.rc2\n" in host.npu_smi("info", "-t", "board", "-i", "3").stdout
    missing = host.npu_smi("info", "-t", "board", "-i", "8")
    assert (missing.returncode, missing.stdout) == (1, "")
    assert missing.stderr == "ascend-sim: no NPU 8 here (npu-smi info -l lists the NPU ids)\n"


def test_an_a3_board_counts_its_two_chips_and_prints_its_firmware(make_host):
    h = make_host("a3", chip="A3")
    out = h.npu_smi("info", "-t", "board", "-i", "4").stdout
    assert "        NPU ID                         : 4\n" in out
    assert "        Firmware Version               : 7.7.0.9.220\n" in out
    assert "        Chip Count                     : 2\n" in out
    # device 9 is NPU 4's second die: that board's firmware changes, the other NPUs keep theirs
    h.fault("versions", "--firmware", "7.5.0.1.129", "--device", "9")
    assert "        Firmware Version               : 7.5.0.1.129\n" in h.npu_smi("info", "-t", "board", "-i", "4").stdout
    assert "        Firmware Version               : 7.7.0.9.220\n" in h.npu_smi("info", "-t", "board", "-i", "3").stdout


def test_init_writes_the_cann_version_files_and_faults_change_them(make_host, tmp_path):
    cann = tmp_path / "cann-root" / "Ascend"
    h = make_host("h1", extra=("--cann-dir", str(cann)))
    assert toolkit_file(cann).read_text() == (
        "package_name=Ascend-cann-toolkit\n"
        "version=8.3.RC1.alpha001\n"
        "innerversion=V100R001C23B046\n"
        "compatible_version=[V100R001C15],[V100R001C18],[V100R001C19],[V100R001C20],[V100R001C21],[V100R001C23]\n"
        f"arch={ARCH}\n"
        "os=linux\n"
        f"path={cann}/ascend-toolkit/8.3.RC1.alpha001/{ARCH}-linux\n"
    )
    kernels = kernels_file(cann).read_text().splitlines()
    assert kernels[:3] == ["Version=8.3.T5.0.B028", "version_dir=8.3.RC1.alpha001", "timestamp=20250807_092944934"]
    h.fault("versions", "--toolkit", "8.3.RC2", "--kernels", "none", "--firmware", "6.2.1.0")
    assert "version=8.3.RC2\n" in toolkit_file(cann).read_text()
    assert not kernels_file(cann).exists()
    assert "        Firmware Version               : 6.2.1.0\n" in h.npu_smi("info", "-t", "board", "-i", "0").stdout
    h.fault("versions", "--firmware", "none")
    assert "        Firmware Version               : NA\n" in h.npu_smi("info", "-t", "board", "-i", "0").stdout
    h.fault("clear")
    assert "version=8.3.RC1.alpha001\n" in toolkit_file(cann).read_text()
    assert "version_dir=8.3.RC1.alpha001\n" in kernels_file(cann).read_text()
    assert "        Firmware Version               : 7.1.0.4.218\n" in h.npu_smi("info", "-t", "board", "-i", "0").stdout


def test_cluster_gives_each_server_its_cann_directory(tmp_path):
    sim("-q", "cluster", "--root", str(tmp_path / "cl"), "--servers", "2", "--chip", "910B", "--devices", "2")
    for name in ("server0", "server1"):
        assert "version=8.3.RC1.alpha001\n" in toolkit_file(tmp_path / "cl" / name / "Ascend").read_text()


def test_a_host_without_a_cann_directory_refuses_cann_versions(host):
    res = run([ASCEND_SIM, "fault", "--state", host.state, "versions", "--toolkit", "8.3.RC2"])
    assert res.returncode == 1
    assert "has no CANN directory for its version files (init --cann-dir DIR)" in res.stderr
