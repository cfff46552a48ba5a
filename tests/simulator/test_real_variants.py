"""The real variants the simulator prints (issue 33): a server's npu-smi Name, its driver generation (the 98- or the
114-column table), its TLS form, a first-generation board - each held against the corpus' published output of that
variant (tests/corpus): every border, header and fixed line byte for byte, every data row's columns where the real one
has them (the numbers - power, temperatures, memory - are the simulator's own)."""

from __future__ import annotations

import re

import pytest

from tests.simulator.simhelpers import REPO, sim

CORPUS = REPO / "tests" / "corpus"
DATA_ROW = re.compile(r"^\| \d")


def _shape(text: str) -> list:
    """Each line as printed, but a data row (``| 0     910B4 | OK | 82.6 ...``) as the columns of its ``|``s."""
    return [("row", [i for i, c in enumerate(line) if c == "|"]) if DATA_ROW.match(line) else line for line in text.splitlines()]


def _real(name: str) -> str:
    return (CORPUS / "npu_smi" / name).read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("sample", "chip", "options", "devices"),
    [
        # the 26.x table, 114 columns, with the container column in its process section
        ("info_910b4_26.0.rc1_wide_container_col.txt", "910B", ("--npu-name", "910B4", "--driver", "26.0.rc1"), 1),
        # a first-generation server printing the bare 910B, its DDR in use
        ("info_910b_gen1_8npu_24.1.0.txt", "910A", ("--npu-name", "910B", "--driver", "24.1.0"), 8),
        ("info_910b1_8npu_24.1.rc3.txt", "910B", ("--npu-name", "910B1", "--driver", "24.1.rc3"), 8),
        ("info_a3_16die_25.2.1.txt", "A3", ("--driver", "25.2.1"), 16),
    ],
)
def test_npu_smi_info_prints_the_published_layout_of_the_variant(make_host, sample, chip, options, devices):
    host = make_host(chip=chip, devices=devices, extra=options)
    out = host.npu_smi("info").stdout
    real = _real(sample)
    ours, theirs = _shape(out), _shape(real)
    # the published text may end early (the triton-ascend page stops after the first process row)
    assert ours[: len(theirs)] == theirs, "\n" + out
    names = set(re.findall(r"^\| \d+\s+(\S+)\s+\| OK", out, re.M))
    assert names == set(re.findall(r"^\| \d+\s+(\S+)\s+\| OK", real, re.M))


def test_a_first_generation_board_shows_ddr_in_use_and_an_a2_one_none(make_host):
    gen1 = make_host("g", chip="910A", devices=8, extra=("--npu-name", "910B")).npu_smi("info").stdout
    a2 = make_host("a", chip="910B", devices=8, extra=("--npu-name", "910B2C")).npu_smi("info").stdout
    assert re.search(r"\| 0\s+\| 0000:C1:00.0  \| 0           2280 / 15039 ", gen1), gen1
    assert "| 0     910B2C              | OK" in a2 and all("0    / 0          " in row for row in a2.splitlines() if "0000:" in row)


def test_the_26x_process_rows_carry_the_container_column(make_host, tmp_path):
    """A process of the simulated host itself: NA in ``Process id in container``, as npu-smi prints it on the host."""
    import os
    import subprocess

    host = make_host(chip="910B", devices=2, extra=("--driver", "26.0.rc1"))
    env = dict(os.environ, ASCEND_DEVICE_ID="1", ASCEND_SIM_STATE=str(host.state))
    holder = subprocess.Popen(["sleep", "30"], env=env)
    try:
        out = host.npu_smi("info").stdout
    finally:
        holder.kill()
        holder.wait()
    row = next(line for line in out.splitlines() if str(holder.pid) in line)
    assert re.match(
        r"^\| 1       0                 \| %-14d\| sleep              \| 1\s+\| NA                      \|$" % holder.pid, row
    ), row
    # as wide as the header above it, which (in the published 26.0.rc1 output too) is 2 columns wider than the table
    header = next(line for line in out.splitlines() if "Process id in container" in line)
    assert len(row) == len(header) == 116 and header in _real("info_910b4_26.0.rc1_wide_container_col.txt")


def test_a_first_generation_board_query_prints_the_training_servers_layout(make_host):
    host = make_host(chip="910A", devices=8, extra=("--driver", "23.0.5"))
    out = host.npu_smi("info", "-t", "board", "-i", "0").stdout
    real = _real("board_910a_d801_23.0.5_tabs.txt")
    assert [line.split(":")[0] for line in out.splitlines()] == [line.split(":")[0] for line in real.splitlines()]
    assert "\tSoftware Version               : 23.0.5\n" in out and "\tPCI Device ID                  : 0xD801\n" in out
    assert "\tCompatibility                  : OK\n" in out
    host.fault("versions", "--compatibility", "NOK")
    assert "\tCompatibility                  : NOK\n" in host.npu_smi("info", "-t", "board", "-i", "0").stdout


def test_the_health_query_prints_the_chips_error_code_and_information(make_host):
    host = make_host(chip="910A", devices=8)
    ok = host.npu_smi("info", "-t", "health", "-i", "3", "-c", "0").stdout
    assert ok == _real("health_ok_910a_tabs.txt") + "\n"  # the published capture ends without its last newline
    host.fault(
        "chip-health",
        "--device",
        "3",
        "--status",
        "Alarm",
        "--code",
        "A4025021 8C03A000",
        "--info",
        "ascend_monitor adda heart beat lost error",
    )
    alarm = host.npu_smi("info", "-t", "health", "-i", "3", "-c", "0").stdout
    assert alarm.splitlines() == [
        "\tHealth Status                  : Alarm",
        "\tError Code                     : A4025021 8C03A000",
        "\tError Information              : ascend_monitor adda heart beat lost error",
    ]
    assert host.npu_smi("info", "-t", "health", "-i", "9", "-c", "0").returncode == 1


def test_the_short_tls_form_has_no_preconfigured_field(make_host):
    full = make_host("f").ok("-i", "0", "-tls", "-g")
    short = make_host("s", extra=("--tls-form", "short")).ok("-i", "0", "-tls", "-g")
    assert (
        full
        == "dev_id:0, tls switch[0](0:disable, 1:enable), tls preconfigured[1](0:non-preset, 1:preset), tls alarm time threshold[60]days\n"
    )
    assert short == "dev_id:0, tls switch[0](0:disable, 1:enable), tls alarm time threshold[60]days\n"


def test_a_driver_the_corpus_has_files_of_gets_its_version_files(make_host, tmp_path):
    cann = tmp_path / "cann"
    make_host(chip="910B", extra=("--driver", "23.0.7", "--cann-dir", str(cann)))
    driver = (cann / "driver" / "version.info").read_text()
    assert driver == (CORPUS / "versions" / "driver_version_23.0.7_faultdiag.info").read_text()
    firmware = (cann / "firmware" / "version.info").read_text()
    assert firmware == (CORPUS / "versions" / "firmware_version_7.1.0.11.220_faultdiag.info").read_text().replace(
        "7.1.0.11.220", "7.1.0.4.218"
    )
    # a driver the corpus has no files of: none (as a driver directory without them)
    other = tmp_path / "other"
    make_host("o", chip="910B", extra=("--driver", "25.3.rc1", "--cann-dir", str(other)))
    assert not (other / "driver" / "version.info").exists() and not (other / "firmware" / "version.info").exists()


def test_a_name_the_chips_servers_do_not_print_is_refused(tmp_path):
    import subprocess
    import sys

    proc = subprocess.run(
        [
            sys.executable,
            str(REPO / "simulator" / "bin" / "ascend-sim"),
            "init",
            "--state",
            str(tmp_path / "s"),
            "--chip",
            "910B",
            "--npu-name",
            "910A",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert (
        proc.returncode == 1
        and "npu-smi on a 910B server prints one of 910B1, 910B2, 910B3, 910B4, 910B2C, 910B4-1, not '910A'" in proc.stderr
    )


def test_a_cluster_mixes_variants_per_server(tmp_path):
    import json

    out = sim(
        "cluster",
        "--root",
        str(tmp_path / "c"),
        "--servers",
        "2",
        "--chip",
        "910B",
        "--devices",
        "2",
        "--variant",
        "server0:npu-name=910B3,driver=23.0.7,tls-form=short;server1:npu-name=910B2C,driver=26.0.rc1",
    )
    servers = json.loads(out)["servers"]
    assert [(s["npu_name"], s["driver"], s["tls_form"]) for s in servers] == [("910B3", "23.0.7", "short"), ("910B2C", "26.0.rc1", "full")]
