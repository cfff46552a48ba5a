"""A3 device numbering end to end, and npu-smi read once for the pre-flight and diagnose, failing closed (issue 26 items 3, 4).

On A3 boards npu-smi prints each NPU's two chips (dies) with their ``Phy-ID``, the id ``hccn_tool -i``, the rank table
and ``ASCEND_RT_VISIBLE_DEVICES`` use, and its process section names a process by NPU and chip. The process rows used to
be read by NPU id: a process on NPU 1 chip 1 (device 3) was charged to device 1, one on NPU 4 chip 1 (device 9) to
device 4, so the busy-device gate missed them, or ``kill_stale`` stopped another job's process.
"""

from __future__ import annotations

import pytest

from ansible_collections.ascend.cluster.plugins.module_utils._job import preflight
from ansible_collections.ascend.cluster.plugins.module_utils._npu import smi as n
from tests.unit.plugins.module_utils.hccn_fakes import INFO_TABLE_910B, NPU_SMI, FakeModule
from tests.unit.plugins.module_utils.test_npu_smi import INFO_TABLE_A3

# npu-smi 26.0's wide layout on an A3 board (its process section adds "Process id in container"), NPUs 0-4 (devices
# 0-9): processes on NPU 0 chip 0, NPU 1 chip 1 and NPU 4 chip 1; NPU 4 chip 1 in Warning.
INFO_TABLE_A3_WIDE = """\
+------------------------------------------------------------------------------------------------------------------+
| npu-smi 26.0.rc2                            Version: 26.0.rc2                                                    |
+---------------------------+---------------+----------------------------------------------------------------------+
| NPU   Name                | Health        | Power(W)             Temp(C)                 Hugepages-Usage(page)   |
| Chip  Phy-ID              | Bus-Id        | AICore(%)            Memory-Usage(MB)        HBM-Usage(MB)           |
+===========================+===============+======================================================================+
| 0     Ascend910           | OK            | 160.0                34                      0    / 0                |
| 0     0                   | 0000:9D:00.0  | 0                    0    / 0                3400 / 65536            |
+------------------------------------------------------------------------------------------------------------------+
| 0     Ascend910           | OK            | -                    35                      0    / 0                |
| 1     1                   | 0000:9F:00.0  | 0                    0    / 0                3401 / 65536            |
+===========================+===============+======================================================================+
| 1     Ascend910           | OK            | 161.0                36                      0    / 0                |
| 0     2                   | 0000:99:00.0  | 0                    0    / 0                3402 / 65536            |
+------------------------------------------------------------------------------------------------------------------+
| 1     Ascend910           | OK            | -                    37                      0    / 0                |
| 1     3                   | 0000:9B:00.0  | 0                    0    / 0                3403 / 65536            |
+===========================+===============+======================================================================+
| 2     Ascend910           | OK            | 162.0                38                      0    / 0                |
| 0     4                   | 0000:B9:00.0  | 0                    0    / 0                3404 / 65536            |
+------------------------------------------------------------------------------------------------------------------+
| 2     Ascend910           | OK            | -                    39                      0    / 0                |
| 1     5                   | 0000:BB:00.0  | 0                    0    / 0                3405 / 65536            |
+===========================+===============+======================================================================+
| 3     Ascend910           | OK            | 163.0                40                      0    / 0                |
| 0     6                   | 0000:B5:00.0  | 0                    0    / 0                3406 / 65536            |
+------------------------------------------------------------------------------------------------------------------+
| 3     Ascend910           | OK            | -                    41                      0    / 0                |
| 1     7                   | 0000:B7:00.0  | 0                    0    / 0                3407 / 65536            |
+===========================+===============+======================================================================+
| 4     Ascend910           | OK            | 164.0                42                      0    / 0                |
| 0     8                   | 0000:3D:00.0  | 0                    0    / 0                3408 / 65536            |
+------------------------------------------------------------------------------------------------------------------+
| 4     Ascend910           | Warning       | -                    43                      0    / 0                |
| 1     9                   | 0000:3F:00.0  | 0                    0    / 0                3409 / 65536            |
+===========================+===============+======================================================================+
+---------------------------+---------------+----------------------------------------------------------------------+
| NPU     Chip              | Process id    | Process name       | Process memory(MB)    | Process id in container |
+===========================+===============+======================================================================+
| 0       0                 | 51000         | python3            | 2048                  | NA                      |
+===========================+===============+======================================================================+
| 1       1                 | 51003         | python3            | 2048                  | NA                      |
+===========================+===============+======================================================================+
| No running processes found in NPU 2                                                                              |
+===========================+===============+======================================================================+
| No running processes found in NPU 3                                                                              |
+===========================+===============+======================================================================+
| 4       1                 | 51009         | python3            | 2048                  | NA                      |
+===========================+===============+======================================================================+
"""


def test_a3_chips_are_numbered_by_their_phy_id():
    devices = n.chip_devices(n.parse_info_table(INFO_TABLE_A3_WIDE))
    assert devices == {(npu, chip): 2 * npu + chip for npu in range(5) for chip in (0, 1)}
    # one chip per NPU (910B): the NPU id
    assert n.chip_devices(n.parse_info_table(INFO_TABLE_910B)) == {(0, 0): 0, (1, 0): 1}


def test_an_a3_process_row_is_charged_to_its_chip_not_its_npu():
    info = n.read_info(INFO_TABLE_A3_WIDE)
    assert [(p["device_id"], p["npu_id"], p["chip_id"], p["pid"], p["where"]) for p in info["processes"]] == [
        (0, 0, 0, 51000, "NPU 0 chip 0 (device 0)"),
        (3, 1, 1, 51003, "NPU 1 chip 1 (device 3)"),
        (9, 4, 1, 51009, "NPU 4 chip 1 (device 9)"),
    ]
    # health uses the same numbering: device 9 is the chip in Warning
    assert info["health"] == dict((d, "Warning" if d == 9 else "OK") for d in range(10))
    assert info["version"] == "26.0.rc2" and info["name"] == "Ascend910"
    # the simulator's (and npu-smi 25.x's) narrower layout
    narrow = n.read_info(INFO_TABLE_A3)
    assert [(p["device_id"], p["pid"]) for p in narrow["processes"]] == [(0, 4242)]
    assert narrow["health"] == {0: "OK", 1: "OK", 2: "OK", 3: "Warning"}


def test_the_busy_gate_names_the_a3_device_a_process_holds_and_only_it(tmp_path):
    processes = n.read_info(INFO_TABLE_A3_WIDE)["processes"]
    busy = preflight.find_busy([1, 3, 4, 9], str(tmp_path / "locks"), str(tmp_path / "jobs"), processes)
    assert [(b["device_id"], b["pid"], b["detail"]) for b in busy] == [
        (3, 51003, "process 51003 (python3) holds NPU 1 chip 1 (device 3)"),
        (9, 51009, "process 51009 (python3) holds NPU 4 chip 1 (device 9)"),
    ]
    # devices 1 and 4 are free: a job on them has nothing to stop (kill_stale used to stop 51003 and 51009 for them)
    assert preflight.find_busy([1, 4], str(tmp_path / "locks"), str(tmp_path / "jobs"), processes) == []


def test_a_process_row_of_a_chip_the_table_does_not_list_is_unreadable():
    garbled = INFO_TABLE_A3_WIDE.replace("| 4       1                 | 51009", "| 7       1                 | 51009")
    with pytest.raises(n.NpuSmiParseError, match="process row of NPU 7 chip 1, which the NPU table does not list"):
        n.read_info(garbled)


def module(answer=None, bins=None, **params):
    transcript = {(NPU_SMI, "info"): answer} if answer is not None else {}
    return FakeModule(params=params, transcript=transcript, bins={"npu-smi": NPU_SMI} if bins is None else bins)


DCMI = "DrvMngGetConsoleLogLevel failed. (g_conLogLevel=3)\ndcmi module initialize failed. ret is -8005\n"


@pytest.mark.parametrize(
    ("fake", "problem"),
    [
        (module(bins={}), "npu-smi not found on PATH or in /usr/local/sbin, /usr/local/bin, /usr/local/Ascend/driver/tools"),
        (module(bins={}, npu_smi="/opt/npu/npu-smi"), "npu-smi not found: /opt/npu/npu-smi is not an executable file"),
        (
            module((1, DCMI, "")),
            "/usr/local/sbin/npu-smi info failed (rc=1): DrvMngGetConsoleLogLevel failed. (g_conLogLevel=3) "
            "dcmi module initialize failed. ret is -8005",
        ),
        (module((124, "", "")), "/usr/local/sbin/npu-smi info did not answer within 30 s (a hung driver?)"),
        (  # exit 0, but no table: garbled
            module((0, DCMI, "")),
            "cannot parse the NPU table (rows '| <id> <name> | <health> |') from npu-smi info, which printed "
            "'DrvMngGetConsoleLogLevel failed. (g_conLogLevel=3)' ...",
        ),
        (  # cut short before the process section: leftovers cannot be seen
            module((0, INFO_TABLE_A3_WIDE.split("| NPU     Chip", maxsplit=1)[0], "")),
            "cannot parse the process section (header '| NPU  Chip | Process id | ...') from npu-smi info, which printed "
            "'| npu-smi 26.0.rc2 Version: 26.0.rc2 |' ...",
        ),
        (module((0, "", "")), "cannot parse the NPU table (rows '| <id> <name> | <health> |') from npu-smi info, which printed nothing"),
    ],
    ids=["missing", "missing at its path", "failing", "timed out", "garbled", "cut short", "silent"],
)
def test_npu_smi_that_cannot_be_read_says_what_failed(fake, problem):
    info, found = preflight.read_npu(fake, fake.params["npu_smi"], runner=fake.run_tool)
    assert info is None
    assert found == problem


def test_npu_smi_read_and_the_selected_devices_it_does_not_show():
    fake = module((0, INFO_TABLE_A3_WIDE, ""))
    info, problem = preflight.read_npu(fake, None, runner=fake.run_tool)
    assert problem is None and sorted(info["health"]) == list(range(10))
    assert preflight.unknown_devices(info, [0, 9]) is None
    assert (
        preflight.unknown_devices(info, [9, 10, 11])
        == "npu-smi info shows no device 10, 11 (it shows devices 0, 1, 2, 3, 4, 5, 6, 7, 8, 9)"
    )
