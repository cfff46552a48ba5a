"""npu-smi parsers and /dev/davinciN discovery."""

from __future__ import annotations

import pytest

from ansible_collections.ascend.cluster.plugins.module_utils._npu import smi as n
from tests.unit.plugins.module_utils.hccn_fakes import INFO_TABLE_910B, NPU_SMI, FakeModule, info_list

INFO_TABLE_A3 = """\
+------------------------------------------------------------------------------------------------+
| npu-smi 25.3.rc1                 Version: 25.3.rc1                                             |
+---------------------------+---------------+----------------------------------------------------+
| NPU   Name                | Health        | Power(W)    Temp(C)           Hugepages-Usage(page)|
| Chip  Phy-ID              | Bus-Id        | AICore(%)   Memory-Usage(MB)  HBM-Usage(MB)        |
+===========================+===============+====================================================+
| 0     Ascend910           | OK            | 88.0        38                0    / 0             |
| 0     0                   | 0000:9D:00.0  | 0           0    / 0          3300 / 65536         |
+------------------------------------------------------------------------------------------------+
| 0     Ascend910           | OK            | -           39                0    / 0             |
| 1     1                   | 0000:9F:00.0  | 0           0    / 0          3307 / 65536         |
+===========================+===============+====================================================+
| 1     Ascend910           | OK            | 95.4        40                0    / 0             |
| 0     2                   | 0000:99:00.0  | 0           0    / 0          3314 / 65536         |
+------------------------------------------------------------------------------------------------+
| 1     Ascend910           | Warning       | -           41                0    / 0             |
| 1     3                   | 0000:9B:00.0  | 0           0    / 0          3321 / 65536         |
+===========================+===============+====================================================+
| NPU     Chip              | Process id    | Process name             | Process memory(MB)      |
+===========================+===============+====================================================+
| 0       0                 | 4242          | python3                  | 1024                    |
+===========================+===============+====================================================+
"""


def test_info_list_reference():
    assert n.parse_info_list(info_list(range(8))) == [{"npu_id": i, "chip_count": 1} for i in range(8)]


def test_info_list_a3_chip_count():
    npus = n.parse_info_list(info_list(range(8), chips=2))
    assert npus[3] == {"npu_id": 3, "chip_count": 2}
    assert n.device_ids(npus) == list(range(16))


def test_info_list_non_contiguous_ids():
    assert n.device_ids(n.parse_info_list(info_list([0, 2, 5]))) == [0, 2, 5]


def test_info_list_empty_host():
    assert n.parse_info_list("Total Count                    : 0\n") == []


@pytest.mark.parametrize("raw", ["", "error: driver not loaded\n", "Total Count : 2\n\nNPU ID : 0\nChip Count : 1\n"])
def test_info_list_unparseable(raw):
    with pytest.raises(n.NpuSmiParseError) as info:
        n.parse_info_list(raw)
    assert info.value.raw == raw


def test_info_table_910b():
    table = n.parse_info_table(INFO_TABLE_910B)
    assert [(npu["npu_id"], npu["name"], npu["health"]) for npu in table] == [(0, "910B3", "OK"), (1, "910B3", "OK")]
    assert table[0]["chips"] == [
        {"chip_id": 0, "phy_id": None, "bus_id": "0000:C1:00.0", "health": "OK", "memory": (0, 0), "hbm": (3378, 65536)}
    ]
    assert n.chip_name(table) == "910B3"


def test_info_table_a3_phy_ids_win():
    table = n.parse_info_table(INFO_TABLE_A3)
    assert len(table) == 2 and table[1]["health"] == "Warning"
    assert [c["phy_id"] for c in table[1]["chips"]] == [2, 3]
    # the process row (PID in column two) is not mistaken for a chip
    assert sum(len(npu["chips"]) for npu in table) == 4
    assert n.device_ids([{"npu_id": 0, "chip_count": 9}], table) == [0, 1, 2, 3]


def test_info_table_unparseable():
    with pytest.raises(n.NpuSmiParseError):
        n.parse_info_table("npu-smi: command failed\n")


def test_davinci_devices(tmp_path):
    for name in ("davinci0", "davinci1", "davinci10", "davinci_manager", "devmm_svm", "hisi_hdc", "davinciX"):
        (tmp_path / name).write_text("")
    assert n.davinci_devices(str(tmp_path)) == [0, 1, 10]
    assert n.davinci_devices(str(tmp_path / "missing")) == []


@pytest.mark.parametrize(
    "table,expected",
    [
        (INFO_TABLE_910B, "910B"),
        (INFO_TABLE_A3, "A3"),  # "Ascend910" alone reads as 910A; two chips per NPU make it A3
        (INFO_TABLE_910B.replace("910B3  ", "910A   "), "910A"),
        (INFO_TABLE_910B.replace("910B3  ", "Atlas9X"), None),
    ],
)
def test_chip_model(table, expected):
    assert n.chip_model(n.parse_info_table(table)) == expected


def test_npu_smi_asks_again_when_the_answer_was_lost():
    module = FakeModule(transcript={(NPU_SMI, "info", "-l"): (0, info_list([0, 1]), "")})
    calls = []

    def run_tool(argv, timeout=None):
        calls.append(argv)
        return (0, "", "") if len(calls) == 1 else module.run_tool(argv, timeout)

    assert [npu["npu_id"] for npu in n.NpuSmi(module, NPU_SMI, runner=run_tool).info_list()] == [0, 1]
    assert len(calls) == 2


@pytest.mark.parametrize(
    "raw, version",
    [
        (INFO_TABLE_A3, "25.3.rc1"),
        (INFO_TABLE_910B, "23.0.0"),
        ("| npu-smi 23.0.rc2                 Version: 23.0.rc2                                     |\n", "23.0.rc2"),
        ("npu-smi 22.0.4   Version: 22.0.4\n", "22.0.4"),  # no box
        ("Total Count : 2\n", None),
        ("", None),
    ],
)
def test_version_from_the_header(raw, version):
    assert n.parse_version(raw) == version


def test_device_health_one_chip_per_npu():
    table = n.parse_info_table(INFO_TABLE_910B.replace("| 1     910B3               | OK  ", "| 1     910B3               | Alarm"))
    assert n.device_health(table) == {0: "OK", 1: "Alarm"}


def test_device_health_a3_is_per_chip():
    """NPU 1's second chip (Phy-ID 3) is in Warning; its first chip (Phy-ID 2) is not."""
    health = n.device_health(n.parse_info_table(INFO_TABLE_A3))
    assert health == {0: "OK", 1: "OK", 2: "OK", 3: "Warning"}
    assert n.parse_info_table(INFO_TABLE_A3)[1]["health"] == "Warning"  # the NPU as a whole: its worst chip


def _sample(name: str) -> str:
    from tests.helpers.corpus import CORPUS

    with open("%s/npu_smi/%s" % (CORPUS, name), encoding="utf-8") as f:
        return f.read()


@pytest.mark.parametrize(
    "sample,chip",
    [
        # issue 33 item 2: npu-smi's bare 910B is the first-generation 910 (its DDR in use), read as A2 before
        ("info_910b_gen1_8npu_24.1.0.txt", "910A"),
        ("info_910b_gen1_1npu_23.0.rc2.txt", "910A"),
        # A2's suffixed names were unknown (None) before
        ("info_910b2c_2npu_23.0.3.txt", "910B"),
        ("info_910b4-1_2npu_25.2.0_redacted_bus.txt", "910B"),
        ("info_910b4_26.0.rc1_wide_container_col.txt", "910B"),
        ("info_a3_16die_25.2.1.txt", "A3"),
        ("info_910a_4npu_21.0.rc1_container.txt", "910A"),
    ],
)
def test_the_chip_of_real_tables(sample, chip):
    assert n.chip_model(n.parse_info_table(_sample(sample))) == chip


def test_a_bare_910b_without_ddr_in_use_or_a_generic_ascend910_without_phy_ids_is_unclear_naming_the_line():
    """Where the evidence is not clear the chip is None and the reason names the field and the line: a bare 910B that
    shows no DDR in use (as only A2 boards do), the generic A3 name on a table without the Chip Phy-ID column."""
    gen1 = _sample("info_910b_gen1_1npu_23.0.rc2.txt").replace("2187 / 15137", "0    / 0    ")
    chip, problem = n.read_chip(n.parse_info_table(gen1))
    assert chip is None
    assert "npu-smi info's Name column '910B' (line '| 0     910B                | OK" in problem and "DDR" in problem
    generic = _sample("info_910b4_8npu_23.0.6.txt").replace("910B4", "Ascend910")
    chip, problem = n.read_chip(n.parse_info_table(generic))
    assert chip is None and "Chip Phy-ID" in problem and "Ascend910" in problem
    assert n.chip_facts(n.parse_info_table(generic)) == {"chip": None, "chip_name": "Ascend910", "chip_problem": problem}
    assert n.chip_facts(None) == {"chip": None, "chip_name": None, "chip_problem": None}


def test_a_26x_process_row_gives_the_pid_in_the_container():
    """npu-smi 26.x's last process column (``Process id in container``): NA for a host process, else the PID there."""
    wide = _sample("info_910b4_26.0.rc1_wide_container_col.txt")
    row = "| 0       0                 | 485946        | pytest             | 5175                  | %s |\n"
    table = n.parse_info_table(wide)
    host = n.parse_npu_processes(wide + row % "NA                     ", table)
    inside = n.parse_npu_processes(wide + row % "31                     ", table)
    assert [(p["pid"], p["container_pid"], p["name"]) for p in host] == [(485946, None, "pytest")]
    assert [(p["pid"], p["container_pid"]) for p in inside] == [(485946, 31)]
