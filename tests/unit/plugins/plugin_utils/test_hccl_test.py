"""CANN's hccl_test for the smoke check's real-hardware collective stage: the commands built, the result table read.

The outputs are recorded in ``hccl_test_outputs/`` (its README says where each comes from: the HCCL Test guide's
result example, its FAQ's "retcode: 7" output, and the tool's own row layout with the check off).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from ansible_collections.ascend.cluster.plugins.plugin_utils._errors import ClusterSpecError
from ansible_collections.ascend.cluster.plugins.plugin_utils._net import hccl_test as h
from tests.helpers import corpus

OUTPUTS = Path(__file__).parent / "hccl_test_outputs"
BINARY = "/usr/local/Ascend/ascend-toolkit/latest/tools/hccl_test/bin/all_reduce_test"


def output(name: str) -> str:
    return (OUTPUTS / name).read_text(encoding="utf-8")


# --------------------------------------------------------------------------- the result table


def test_the_guides_example_gives_every_row():
    result = h.parse(output("guide_example_8npu.txt"))
    assert result["errors"] == []
    assert len(result["rows"]) == 14
    assert result["rows"][0] == {"data_size": 8192, "avg_time_us": 764.55, "alg_bandwidth_gbps": 0.00998, "check_result": "success"}
    assert result["rows"][-1] == {"data_size": 67108864, "avg_time_us": 2630.2, "alg_bandwidth_gbps": 23.76245, "check_result": "success"}


def test_the_tools_own_header_spelling_and_null_checks_are_read():
    rows = h.parse(output("check_off_aveg_time.txt"))["rows"]
    assert [(r["data_size"], r["check_result"]) for r in rows] == [(8192, "NULL"), (16384, "NULL"), (32768, "NULL"), (65536, "NULL")]


def test_an_hccl_error_gives_no_rows_and_its_lines():
    result = h.parse(output("retcode7_init_hcclcomm.txt"))
    assert result["rows"] == []
    assert result["errors"][:2] == [
        "hccl interface return err ./common/src/hccl_test_common.cc:538, retcode: 7",
        "This is an error in init_hcclComm.",
    ]


def test_rows_before_the_header_and_other_lines_are_not_the_tables():
    text = "12 | 1.0 | 2.0 | success\n" + output("guide_example_8npu.txt") + "Warning: something else\n"
    assert len(h.parse(text)["rows"]) == 14
    assert h.parse("")["rows"] == []


@pytest.mark.parametrize(
    ("name", "rc", "floor", "ok", "detail"),
    [
        (
            "guide_example_8npu.txt",
            0,
            0,
            True,
            "all_reduce_test on 8 NPU(s): 23.76 GB/s alg_bandwidth at 67108864 bytes, avg 2630.20 us, check success",
        ),
        ("guide_example_8npu.txt", 0, 20, True, None),
        (
            "guide_example_8npu.txt",
            0,
            30,
            False,
            "all_reduce_test on 8 NPU(s): 23.76 GB/s alg_bandwidth at 67108864 bytes, avg 2630.20 us, check success, "
            "below the floor of 30 GB/s",
        ),
        ("failed_check.txt", 0, 0, False, None),
        (
            "retcode7_init_hcclcomm.txt",
            1,
            0,
            False,
            "all_reduce_test on 8 NPU(s): exit 1: hccl interface return err ./common/src/hccl_test_common.cc:538, retcode: 7 / "
            "This is an error in init_hcclComm.",
        ),
        ("retcode7_init_hcclcomm.txt", 0, 0, False, None),
    ],
)
def test_the_verdict_of_a_run(name, rc, floor, ok, detail):
    got_ok, got_detail, _gbps = h.verdict({"rc": rc, "stdout": output(name), "stderr": "", "np": 8}, floor)
    assert got_ok is ok
    if detail:
        assert got_detail == detail
    if name == "failed_check.txt":
        assert got_detail.endswith("; check_result failed at 33554432 bytes (wrong sums)")
    if name == "retcode7_init_hcclcomm.txt" and rc == 0:
        assert ": no result table: hccl interface return err" in got_detail


def test_a_run_that_did_not_start_or_was_refused():
    assert h.verdict({"msg": "[Errno 2] No such file or directory: b'bash'"}) == (
        False,
        "hccl_test failed: [Errno 2] No such file or directory: b'bash'",
        None,
    )
    assert h.verdict({"refused": "why"}) == (False, "why", None)
    ok, detail, _gbps = h.verdict({"rc": 127, "stdout": "", "stderr": "bash: line 1: mpirun: command not found", "devices": [0, 1]})
    assert not ok and detail == "all_reduce_test on 2 NPU(s): exit 127: bash: line 1: mpirun: command not found"


# --------------------------------------------------------------------------- the commands


def test_the_single_server_command_is_the_guides():
    # the guide: mpirun -n 8 ./bin/all_reduce_test -b 8K -e 64M -f 2 -d fp32 -o sum -p 8
    assert h.command(np=8, per_server=8, size_mb=64) == [
        "mpirun", "-n", "8", "./bin/all_reduce_test", "-p", "8", "-b", "8K", "-e", "64M", "-f", "2", "-d", "fp32", "-o", "sum",
    ]  # fmt: skip


def test_the_cluster_command_names_the_hostfile_for_each_mpi():
    assert h.command(np=16, per_server=8, size_mb=64, hostfile_path="/run/j/hostfile")[:5] == [
        "mpirun",
        "-f",
        "/run/j/hostfile",
        "-n",
        "16",
    ]
    openmpi = h.command(np=16, per_server=8, size_mb=64, mpi="openmpi", hostfile_path="/run/j/hostfile", env_names=["HCCL_TEST_USE_DEVS"])
    assert openmpi[:11] == [
        "mpirun", "-hostfile", "/run/j/hostfile", "-n", "16", "-x", "LD_LIBRARY_PATH", "-x", "HCCL_TEST_USE_DEVS", "--allow-run-as-root",
        "./bin/all_reduce_test",
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"np": 12, "per_server": 8, "size_mb": 4}, "-n 12 must be a multiple of -p 8"),
        ({"np": 8, "per_server": 8, "size_mb": 0}, "at least 1 MiB"),
        ({"np": 8, "per_server": 8, "size_mb": 4, "mpi": "intelmpi"}, "one of mpich, openmpi, got 'intelmpi'"),
    ],
)
def test_a_command_that_cannot_be_built_is_refused(kwargs, message):
    with pytest.raises(ClusterSpecError, match=message):
        h.command(**kwargs)


def test_the_hostfile_of_each_mpi():
    assert h.hostfile([("10.0.0.1", 8), ("10.0.0.2", 8)], "mpich") == "10.0.0.1:8\n10.0.0.2:8\n"
    assert h.hostfile([("10.0.0.1", 8), ("10.0.0.2", 8)], "openmpi") == "10.0.0.1 slots=8\n10.0.0.2 slots=8\n"


def test_where_the_tool_is_looked_for():
    assert h.binary_paths() == [BINARY, "/usr/local/Ascend/cann/tools/hccl_test/bin/all_reduce_test"]
    assert h.binary_paths("/opt/Ascend/")[0] == "/opt/Ascend/ascend-toolkit/latest/tools/hccl_test/bin/all_reduce_test"
    assert h.install_dir(BINARY) == "/usr/local/Ascend/ascend-toolkit/latest"
    with pytest.raises(ClusterSpecError, match="is not a path ending in /tools/hccl_test/bin/all_reduce_test"):
        h.install_dir("/usr/bin/all_reduce_test")


def _servers(*devices):
    return [
        {"server_id": f"10.0.0.{i + 1}", "host": f"server{i}", "devices": [{"device_id": d, "device_ip": "x"} for d in devs]}
        for i, devs in enumerate(devices)
    ]


def test_the_plan_of_rank_0s_server_runs_its_own_npus_then_the_clusters():
    plan = h.plan(_servers([0, 1, 2, 3], [0, 1, 2, 3]), "server0", binary=BINARY, size_mb=64, hostfile_path="/run/j/hostfile")
    server, cluster = plan["server"], plan["cluster"]
    assert server["environment"] == {"HCCL_TEST_USE_DEVS": "0,1,2,3"}
    assert server["command"] == (
        "cd /usr/local/Ascend/ascend-toolkit/latest/tools/hccl_test && HCCL_TEST_USE_DEVS=0,1,2,3 "
        "mpirun -n 4 ./bin/all_reduce_test -p 4 -b 8K -e 64M -f 2 -d fp32 -o sum"
    )
    # the argv: bash sources set_env.sh when present, puts MPI and the toolkit on the paths, runs from the tool's directory
    assert server["argv"][:7] == ["bash", "-c", h.WRAPPER, "ascend-hccl-test", "", "", "/usr/local/Ascend/ascend-toolkit/latest"]
    assert server["argv"][7:] == [
        "mpirun",
        "-n",
        "4",
        "./bin/all_reduce_test",
        "-p",
        "4",
        "-b",
        "8K",
        "-e",
        "64M",
        "-f",
        "2",
        "-d",
        "fp32",
        "-o",
        "sum",
    ]
    assert cluster["np"] == 8
    assert cluster["hostfile"] == "10.0.0.1:4\n10.0.0.2:4\n" and cluster["hostfile_path"] == "/run/j/hostfile"
    assert cluster["argv"][7:12] == ["mpirun", "-f", "/run/j/hostfile", "-n", "8"]
    assert "-p 4 " in cluster["command"]


def test_the_plan_of_another_server_has_no_cluster_run():
    plan = h.plan(_servers([0, 1], [0, 1]), "server1", binary=BINARY, size_mb=4, hostfile_path="/h")
    assert plan["server"]["devices"] == [0, 1] and plan["cluster"] is None
    assert h.plan(_servers([0, 1], [0, 1]), "spare", binary=BINARY, size_mb=4) == {"server": None, "cluster": None}
    assert h.plan(_servers([0, 1]), "server0", binary=BINARY, size_mb=4)["cluster"] is None  # one server: its own run says it


def test_servers_with_different_devices_refuse_the_cluster_run():
    plan = h.plan(_servers([0, 1, 2, 3], [4, 5, 6, 7]), "server0", binary=BINARY, size_mb=4)
    assert plan["cluster"] == {
        "refused": "hccl_test runs the same NPUs on every server (HCCL_TEST_USE_DEVS and -p are one value for all), and this "
        "job's differ (10.0.0.1: 0,1,2,3; 10.0.0.2: 4,5,6,7): smoke-check an np that gives every server the same devices"
    }


def test_the_set_env_mpi_home_and_extra_variables_reach_the_run():
    plan = h.plan(
        _servers([0, 1], [0, 1]),
        "server0",
        binary=BINARY,
        size_mb=4,
        mpi="openmpi",
        mpi_home="/usr/local/openmpi",
        set_env="/usr/local/Ascend/ascend-toolkit/set_env.sh",
        hostfile_path="/h",
        extra_env={"HCCL_SOCKET_IFNAME": "eth0"},
    )
    cluster = plan["cluster"]
    assert cluster["argv"][4:6] == ["/usr/local/Ascend/ascend-toolkit/set_env.sh", "/usr/local/openmpi"]
    assert cluster["environment"] == {"HCCL_SOCKET_IFNAME": "eth0", "HCCL_TEST_USE_DEVS": "0,1"}
    assert ["-x", "HCCL_TEST_USE_DEVS", "-x", "HCCL_SOCKET_IFNAME"] == cluster["argv"][14:18]
    assert cluster["hostfile"] == "10.0.0.1 slots=2\n10.0.0.2 slots=2\n"


def test_bad_input_is_named():
    with pytest.raises(ClusterSpecError, match="the job's servers"):
        h.plan("server0", "server0", binary=BINARY, size_mb=4)  # type: ignore[arg-type]


def test_the_wrapper_sources_set_env_puts_mpi_first_and_runs_from_the_tools_directory(tmp_path):
    install, mpi = tmp_path / "Ascend" / "cann", tmp_path / "mpich"
    (install / "tools" / "hccl_test" / "bin").mkdir(parents=True)
    (mpi / "bin").mkdir(parents=True)
    fake = mpi / "bin" / "mpirun"
    fake.write_text('#!/bin/sh\necho "$* | $(pwd) | $LD_LIBRARY_PATH | $FROM_SET_ENV"\n')
    fake.chmod(0o755)
    set_env = tmp_path / "set_env.sh"
    set_env.write_text("export FROM_SET_ENV=sourced\n")
    argv = h.wrapped(["mpirun", "-n", "2"], install=str(install), set_env=str(set_env), mpi_home=str(mpi))
    out = subprocess.run(argv, capture_output=True, text=True, env={"PATH": "/usr/bin:/bin", "LD_LIBRARY_PATH": "/x"}, check=True).stdout
    assert out == f"-n 2 | {install}/tools/hccl_test | {mpi}/lib:{install}/lib64:/x | sourced\n"
    # no set_env.sh, no MPI home: mpirun from PATH, only the toolkit's lib64 added
    argv = h.wrapped(["sh", "-c", 'echo "$LD_LIBRARY_PATH"'], install=str(install), set_env=str(tmp_path / "none.sh"))
    assert subprocess.run(argv, capture_output=True, text=True, env={"PATH": "/usr/bin:/bin"}, check=True).stdout == f"{install}/lib64:\n"


# --------------------------------------------------------------------------- which collective check runs

LOOKED = h.binary_paths()


def test_auto_runs_hccl_test_where_every_server_has_it():
    assert h.choose_mode("auto", {"s0": BINARY, "s1": BINARY}) == {"mode": "hccl_test", "error": None}
    assert h.choose_mode("hccl_test", {"s0": BINARY}) == {"mode": "hccl_test", "error": None}


def test_auto_without_the_tool_refuses_naming_the_stand_in():
    got = h.choose_mode("auto", {"s0": BINARY, "s1": ""}, looked_for=LOOKED)
    assert got["error"] == (
        "collective_mode=auto: CANN's hccl_test (all_reduce_test) is not installed on s1 (looked for "
        "/usr/local/Ascend/ascend-toolkit/latest/tools/hccl_test/bin/all_reduce_test or "
        "/usr/local/Ascend/cann/tools/hccl_test/bin/all_reduce_test), so no real-hardware collective check can run: build it "
        "under the CANN toolkit's tools/hccl_test (the HCCL Test guide); on a test bed, where each device IP is a host "
        "interface, run the HCCL stand-in instead: -e collective_mode=standin"
    )
    assert h.choose_mode("hccl_test", {"s0": ""})["error"].startswith(
        "collective_mode=hccl_test: CANN's hccl_test (all_reduce_test) is not installed on s0 (looked for "
    )


def test_the_stand_in_refuses_device_ips_that_are_not_its_servers():
    assert h.choose_mode("standin", {}, unbound={"s0": [], "s1": []}) == {"mode": "standin", "error": None}
    assert h.choose_mode("standin", {}, unbound={"s1": ["198.19.0.2"], "s0": ["198.19.0.1", "198.19.1.1"]})["error"] == (
        "the HCCL stand-in (a test-bed tool) binds each rank's device IP on its server, and these device IPs are not "
        "addresses of their servers (s0: 198.19.0.1, 198.19.1.1; s1: 198.19.0.2): on real NPUs the device IP lives on the "
        "NPU, so run CANN's hccl_test (-e collective_mode=hccl_test); the simulated cluster's device IPs are on no "
        "interface, so no collective check runs there"
    )
    with pytest.raises(ClusterSpecError, match="one of auto, hccl_test, standin, got 'nccl'"):
        h.choose_mode("nccl", {})


def test_rank_0s_server_comes_first_in_the_hostfile():
    servers = _servers([0, 1], [0, 1])
    plan = h.plan(servers, "server1", binary=BINARY, size_mb=4, rank0_server="10.0.0.2", hostfile_path="/h")
    assert plan["cluster"]["hostfile"] == "10.0.0.2:2\n10.0.0.1:2\n"


def test_a_run_is_bounded_by_coreutils_timeout_and_a_stopped_run_says_so():
    plan = h.plan(_servers([0, 1]), "server0", binary=BINARY, size_mb=4, timeout_s=600)
    assert plan["server"]["argv"][7:11] == ["timeout", "--kill-after=30", "600", "mpirun"]
    assert "timeout" not in plan["server"]["command"]  # the command shown is the guide's
    ok, detail, _gbps = h.verdict(dict(plan["server"], rc=124, stdout="", stderr=""))
    assert not ok and detail == "all_reduce_test on 2 NPU(s): stopped after 600 s (ascend_smoke_hccl_test_timeout), exit 124: no output"


@pytest.mark.parametrize("entry, raw", corpus.samples("hccl_test"))
def test_every_real_hccl_test_output_is_read_right(entry: dict, raw: str) -> None:
    assert h.parse(raw) == entry["expect"]
