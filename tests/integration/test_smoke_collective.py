"""ascend.cluster.smoke -e collective=true on the simulated 2 x 8 cluster: which collective check runs, or why none does.

The simulated cluster has no CANN hccl_test and its device IPs are on no interface, so ``auto`` and ``standin`` are
both refused there with their messages (the rank check still runs). The real-hardware path (``hccl_test``) runs with a
test double of MPI: ``all_reduce_test`` placed where the CANN toolkit builds it under the server's ``ascend_cann_dir``,
and an ``mpirun`` (``ascend_smoke_hccl_test_mpi_home``) that records how it was started and prints the HCCL Test
guide's result example (tests/unit/plugins/plugin_utils/hccl_test_outputs/). The stand-in's own run: the test bed.
"""

from __future__ import annotations

import json

from tests.helpers.ansible_cli import run_playbook
from tests.helpers.collection import REPO_ROOT

from .conftest import SIM_INVENTORY
from .test_launch_playbooks import launch_vars
from .test_smoke import SMOKE, summary_document, summary_rows

GUIDE_EXAMPLE = REPO_ROOT / "tests" / "unit" / "plugins" / "plugin_utils" / "hccl_test_outputs" / "guide_example_8npu.txt"


def collective_rows(rows):
    return [(r["server"], r["result"], r["detail"]) for r in rows if r["stage"] == "collective"]


def test_auto_refuses_where_no_hccl_test_is_installed_naming_the_stand_in(sim_cluster):
    cluster = sim_cluster()
    res = run_playbook(SMOKE, SIM_INVENTORY, extra_vars=launch_vars(cluster, np=4, collective=True))
    assert res.rc != 0, res
    rows = summary_rows(res, cluster)
    assert {r["result"] for r in rows if r["stage"] == "rank"} == {"OK"}
    (row,) = collective_rows(rows)
    base = f"{cluster.root}/server0/Ascend"
    assert row == (
        "-",
        "FAIL",
        f"collective_mode=auto: CANN's hccl_test (all_reduce_test) is not installed on server0, server1 (looked for "
        f"{base}/ascend-toolkit/latest/tools/hccl_test/bin/all_reduce_test or {base}/cann/tools/hccl_test/bin/all_reduce_test), "
        "so no real-hardware collective check can run: build it under the CANN toolkit's tools/hccl_test (the HCCL Test "
        "guide); on a test bed, where each device IP is a host interface, run the HCCL stand-in instead: -e collective_mode=standin",
    ), rows


def test_the_stand_in_is_refused_where_the_device_ips_are_not_the_servers(sim_cluster):
    cluster = sim_cluster()
    res = run_playbook(SMOKE, SIM_INVENTORY, extra_vars=launch_vars(cluster, np=4, collective=True, collective_mode="standin"))
    assert res.rc != 0, res
    ((server, result, detail),) = collective_rows(summary_rows(res, cluster))
    assert (server, result) == ("-", "FAIL")
    assert detail.startswith(
        "the HCCL stand-in (a test-bed tool) binds each rank's device IP on its server, and these device IPs are not addresses "
        "of their servers (server0: 198.18.1.10, 198.18.1.11; server1: 198.18.2.10, 198.18.2.11): on real NPUs the device IP "
        "lives on the NPU, so run CANN's hccl_test (-e collective_mode=hccl_test)"
    ), detail
    assert detail.endswith("the simulated cluster's device IPs are on no interface, so no collective check runs there")
    assert not (cluster.root / "runs").exists() or not any(p.name.endswith("-collective") for p in (cluster.root / "runs").iterdir())


def test_hccl_test_runs_on_each_server_then_over_all_and_holds_the_floor(sim_cluster, tmp_path):
    cluster = sim_cluster()
    for server in ("server0", "server1"):
        tool = cluster.root / server / "Ascend" / "ascend-toolkit" / "latest" / "tools" / "hccl_test" / "bin" / "all_reduce_test"
        tool.parent.mkdir(parents=True)
        tool.write_text("#!/bin/sh\nexit 0\n")
        tool.chmod(0o755)
    calls = tmp_path / "mpirun.calls"
    mpirun = tmp_path / "mpi" / "bin" / "mpirun"
    mpirun.parent.mkdir(parents=True)
    mpirun.write_text(
        "#!/bin/sh\n"
        f'printf \'%s\\n\' "{{\\"cwd\\": \\"$(pwd)\\", \\"devs\\": \\"$HCCL_TEST_USE_DEVS\\", \\"args\\": \\"$*\\"}}" >> {calls}\n'
        f"cat {GUIDE_EXAMPLE}\n"
    )
    mpirun.chmod(0o755)
    extra = launch_vars(cluster, np=8, collective=True, collective_min_gbps=20, ascend_smoke_hccl_test_mpi_home=str(tmp_path / "mpi"))
    res = run_playbook(SMOKE, SIM_INVENTORY, extra_vars=extra)
    assert res.rc == 0, res
    rows = summary_rows(res, cluster)
    ok = "all_reduce_test on {} NPU(s): 23.76 GB/s alg_bandwidth at 67108864 bytes, avg 2630.20 us, check success"
    assert collective_rows(rows) == [
        ("server0", "OK", "devices 0,1,2,3: " + ok.format(4)),
        ("server1", "OK", "devices 0,1,2,3: " + ok.format(4)),
        ("-", "OK", "all 2 servers: " + ok.format(8)),
    ], rows
    assert summary_document(cluster)["line"].endswith(", collective OK")
    # as the guide starts it: from the toolkit's tools/hccl_test, -n all NPUs, -p one server's, the job's devices
    started = [json.loads(line) for line in calls.read_text().splitlines()]
    tools = {f"{cluster.root}/{s}/Ascend/ascend-toolkit/latest/tools/hccl_test" for s in ("server0", "server1")}
    assert {s["cwd"] for s in started} <= tools and {s["devs"] for s in started} == {"0,1,2,3"}
    single = "-n 4 ./bin/all_reduce_test -p 4 -b 8K -e 64M -f 2 -d fp32 -o sum"
    hostfile = f"{cluster.root}/runs/{summary_document(cluster)['job_id']}-collective/hostfile"
    assert sorted(s["args"] for s in started) == sorted(
        [single, single, f"-f {hostfile} -n 8 ./bin/all_reduce_test -p 4 -b 8K -e 64M -f 2 -d fp32 -o sum"]
    )
    # one line per server, rank 0's server first (MPI numbers the ranks in the hostfile's order)
    table = json.loads((cluster.root / "rank_table.json").read_text())
    rank0 = next(s["server_id"] for s in table["server_list"] if any(d["rank_id"] == "0" for d in s["device"]))
    lines = open(hostfile).read().splitlines()
    assert sorted(lines) == ["127.0.1.1:4", "127.0.1.2:4"] and lines[0] == f"{rank0}:4", lines

    # a floor above what the runs reached: each run is a finding with its figure
    extra["collective_min_gbps"] = 30
    res = run_playbook(SMOKE, SIM_INVENTORY, extra_vars=extra)
    assert res.rc != 0, res
    failed = [row for row in collective_rows(summary_rows(res, cluster)) if row[1] == "FAIL"]
    assert len(failed) == 3 and all(detail.endswith(", below the floor of 30 GB/s") for _s, _r, detail in failed), failed
