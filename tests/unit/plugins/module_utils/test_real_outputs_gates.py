"""The gates that read npu-smi's and the packages' real outputs (issue 33): the chip's error code in the health refusal,
the 26.x container PID, the one-server version fit, a chip that is unclear - each on a sample of tests/corpus."""

from __future__ import annotations

import os

import pytest

from ansible_collections.ascend.cluster.plugins.module_utils._hccn.facts import Gatherer
from ansible_collections.ascend.cluster.plugins.module_utils._job import preflight
from ansible_collections.ascend.cluster.plugins.module_utils._npu import smi as n
from tests.helpers.corpus import CORPUS
from tests.unit.plugins.module_utils.hccn_fakes import HCCN, NPU_SMI, FakeModule, device_answers, info_list
from tests.unit.plugins.module_utils.test_job_preflight import params


def sample(family: str, name: str) -> str:
    with open(os.path.join(CORPUS, family, name), encoding="utf-8") as f:
        return f.read()


ALARM = sample("npu_smi", "health_alarm_multiline_910a.txt")
# the Paddle container's table of a 910A server (NPUs 4-7), its NPU 5 in Alarm, with the process section npu-smi prints
TABLE_910A = (
    sample("npu_smi", "info_910a_4npu_21.0.rc1_container.txt").replace(
        "| 5     910A           | OK     ", "| 5     910A           | Alarm  "
    )
    + "| NPU     Chip         | Process id    | Process name             | Process memory(MB)      |\n"
)


def test_an_alarm_chip_is_refused_naming_the_error_code_and_information_the_chip_reports(tmp_path):
    """npu-smi info says one word (Alarm); npu-smi info -t health -i 5 -c 0 says which error: the refusal names it."""
    fake = FakeModule(bins={"npu-smi": NPU_SMI})
    fake.transcript[(NPU_SMI, "info")] = (0, TABLE_910A, "")
    fake.transcript[(NPU_SMI, "info", "-t", "health", "-i", "5", "-c", "0")] = (0, ALARM, "")
    with pytest.raises(preflight.PreflightFailed) as caught:
        preflight.run(fake, params(tmp_path, devices=[4, 5]), runner=fake.run_tool)
    msg = caught.value.fields["msg"]
    assert "device 5 (910A): Alarm, Error Code A4025021 8C03A000 8C084E00 (ascend_monitor adda heart beat lost error; node type=" in msg
    assert caught.value.fields["chip_errors"] == {
        5: "Error Code A4025021 8C03A000 8C084E00 (ascend_monitor adda heart beat lost error; node type=process-manager, sensor "
        "type=General Software, event state=The process start failed or exit abnormally; node type=adda, sensor "
        "type=Heartbeat Sensor, event state=Heartbeat Lost.)"
    }
    # only the unhealthy chip's health is asked
    assert [c for c in fake.calls if "health" in c] == [(NPU_SMI, "info", "-t", "health", "-i", "5", "-c", "0")]


def test_a_health_query_that_fails_leaves_the_word_alone(tmp_path):
    fake = FakeModule(bins={"npu-smi": NPU_SMI})
    fake.transcript[(NPU_SMI, "info")] = (0, TABLE_910A, "")
    with pytest.raises(preflight.PreflightFailed) as caught:
        preflight.run(fake, params(tmp_path, devices=[5]), runner=fake.run_tool)
    assert "device 5 (910A): Alarm. Such a chip" in caught.value.fields["msg"] and caught.value.fields["chip_errors"] == {}


def _proc(tmp_path, pid: int, comm: str) -> None:
    os.makedirs(str(tmp_path / str(pid)))
    (tmp_path / str(pid) / "comm").write_text(comm + "\n")


def test_the_pid_to_signal_is_the_one_that_exists_here_under_the_printed_name(tmp_path):
    """26.x: ``Process id`` is the host's, ``Process id in container`` the container's (NA on the host)."""
    row = {"pid": 485946, "name": "pytest", "container_pid": 31}
    assert preflight.local_pid(dict(row, container_pid=None), str(tmp_path)) == 485946  # the host's own process
    assert preflight.local_pid(row, str(tmp_path)) is None  # neither PID here: nothing is signalled
    _proc(tmp_path, 485946, "pytest")
    assert preflight.local_pid(row, str(tmp_path)) == 485946  # run on the host
    _proc(tmp_path, 31, "pytest")
    assert preflight.local_pid(row, str(tmp_path)) == 31  # run in the container
    _proc(tmp_path, 77, "bash")
    assert preflight.local_pid(dict(row, container_pid=77, pid=78), str(tmp_path)) is None  # another process's PID


def _server(tmp_path, table: str) -> dict:
    transcript = {(NPU_SMI, "info", "-l"): (0, info_list([0, 1]), ""), (NPU_SMI, "info"): (0, table, "")}
    transcript.update(device_answers(0))
    transcript.update(device_answers(1))
    module = FakeModule(
        params={"hccn_conf": str(tmp_path / "none.conf"), "devices": [0, 1]},
        transcript=transcript,
        bins={"hccn_tool": HCCN, "npu-smi": NPU_SMI},
    )
    return Gatherer(module, runner=module.run_tool).gather()


def test_hccn_facts_read_the_first_generation_910b_and_warn_naming_the_line_where_the_chip_is_unclear(tmp_path):
    first_gen = sample("npu_smi", "info_910b_gen1_8npu_24.1.0.txt")
    facts = _server(tmp_path, first_gen)
    assert (facts["chip"], facts["chip_name"], facts["chip_problem"]) == ("910A", "910B", None)
    unclear = _server(tmp_path, first_gen.replace("2382 / 15038", "0    / 0    "))
    assert unclear["chip"] is None and "Memory-Usage" in unclear["chip_problem"]
    assert ["chip unknown: " + unclear["chip_problem"]] == [w for w in unclear["warnings"] if w.startswith("chip unknown")]
    assert "| 0     910B                | OK" in unclear["chip_problem"]


def test_a_chip_map_with_an_unavailable_npu_keeps_its_row_and_gives_it_no_logic_id():
    """The npu-smi reference: an NPU ID of -1 in ``npu-smi info -m`` marks an NPU that is not available."""
    rows = n.parse_map(
        sample("npu_smi", "m_910a_8npu_tabs.txt").replace(
            "\t3                              0                              3",
            "\t-1                             0                              3",
        )
    )
    assert [row["npu_id"] for row in rows] == [0, 1, 2, -1, 4, 5, 6, 7]
    assert sorted(n.logic_ids(rows).values()) == [0, 1, 2, 4, 5, 6, 7]


def _install(base, name: str, path: str) -> None:
    target = os.path.join(str(base), path)
    os.makedirs(os.path.dirname(target), exist_ok=True)
    with open(target, "w", encoding="utf-8") as f:
        f.write(sample("versions", name))


def test_the_preflight_reads_the_packages_files_under_the_install_directory_and_checks_their_fit(tmp_path):
    """The driver's and the firmware's version.info under <cann_dir>/driver and /firmware (where the simulated cluster
    and a single-directory install keep them), the toolkit's install info as read_cann finds it."""
    arch = os.uname()[4]
    _install(tmp_path, "driver_version_23.0.7_faultdiag.info", "driver/version.info")
    _install(tmp_path, "firmware_version_7.1.0.11.220_faultdiag.info", "firmware/version.info")
    _install(tmp_path, "toolkit_7.0.T10_faultdiag.info", "ascend-toolkit/latest/%s-linux/ascend_toolkit_install.info" % arch)
    fake = FakeModule(bins={})
    found = preflight.read_versions(fake, None, None, [0], str(tmp_path), runner=fake.run_tool)
    assert found["version_fit"] == {"problems": [], "unknown": []} and found["cann_toolkit_version"] == "7.0.T10"
    # a firmware outside the driver's compatible_version_fw (the 23.0.RC3 reference board's 6.2.1.0) is a problem
    with open(os.path.join(str(tmp_path), "firmware", "version.info"), "w", encoding="utf-8") as f:
        f.write(sample("versions", "firmware_version_7.1.0.11.220_faultdiag.info").replace("Version=7.1.0.11.220", "Version=6.2.1.0"))
    problems = preflight.read_versions(fake, None, None, [0], str(tmp_path), runner=fake.run_tool)["version_fit"]["problems"]
    assert problems == [
        "the firmware 6.2.1.0 (%s/firmware/version.info: 'Version=6.2.1.0') is outside the driver's compatible firmware "
        "(%s/driver/version.info: 'compatible_version_fw=[7.0.0,7.1.99]')" % (tmp_path, tmp_path)
    ]


def test_a_table_whose_header_gives_no_version_leaves_the_driver_unknown_and_warns_naming_the_line(tmp_path):
    table = sample("npu_smi", "info_910b1_8npu_24.1.rc3.txt").replace("Version: 24.1.rc3", "Ver 24.1.rc3")
    facts = _server(tmp_path, table)
    assert facts["driver_version"] is None and facts["chip"] == "910B"
    line = next(row for row in table.splitlines() if "Ver 24.1.rc3" in row)
    assert [w for w in facts["warnings"] if "npu-smi info's header" in w] == [
        f"npu-smi info's header gave no driver version (no 'Version:' in {line.strip()!r}): driver version unknown"
    ]
    assert n.version_problem(sample("npu_smi", "info_910b1_8npu_24.1.rc3.txt")) is None
