"""The smoke summary (plugin_utils/_net/smoke.py; filters smoke_summary and smoke_report), table-driven."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.ascend.cluster.plugins.filter.smoke import smoke_report, smoke_summary
from ansible_collections.ascend.cluster.plugins.plugin_utils._net import smoke as _smoke

CHECK_SCRIPT = Path(__file__).resolve().parents[4] / "roles" / "smoke_check" / "files" / "ascend_rank_check.py"


def verdict_log(ok=True, failed=(), passed=7):
    lines = [
        "PASS rank_table  ...",
        f"{_smoke.VERDICT} " + json.dumps({"ok": ok, "rank_id": "0", "device_id": "0", "passed": passed, "failed": list(failed)}),
    ]
    return "\n".join(lines) + "\n"


HEALTHY = {"rows": [{"server": "s0", "device": d} for d in range(4)], "problems": [], "bad": [], "ok": True}
ONE_BAD = {
    "rows": HEALTHY["rows"],
    "problems": [
        "s0 device 3: link DOWN - check the optics/cable of NPU 3 (eth3) and its switch port",
        "s0 device 2: Init - still Init",
        "cluster: TLS switch differs between devices (on at s0 device 1)",
    ],
    "bad": [{"server": "s0", "device": 3, "status": "link DOWN"}, {"server": "s0", "device": 2, "status": "Init"}],
    "ok": False,
}


# ---- the summary filter -------------------------------------------------------------------


def test_the_script_and_the_summary_agree_on_the_verdict_line():
    assert f'VERDICT = "{_smoke.VERDICT}"' in CHECK_SCRIPT.read_text()


@pytest.mark.parametrize(
    "log, ok, detail",
    [
        (verdict_log(), True, "7 checks passed"),
        (
            verdict_log(
                ok=False,
                failed=[{"check": "device_id", "detail": "table device 1, DEVICE_ID=0"}, {"check": "rank_size", "detail": "RANK_SIZE=3"}],
            ),
            False,
            "device_id: table device 1, DEVICE_ID=0; rank_size: RANK_SIZE=3",
        ),
        ("", False, "no verdict: the rank wrote nothing"),
        (None, False, "no verdict: the rank wrote nothing"),
        ("python3: can't open file 'x.py'\n", False, "no verdict; the rank's last line: python3: can't open file 'x.py'"),
        (f"{_smoke.VERDICT} {{not json\n", False, "unreadable verdict line"),
        (f"{_smoke.VERDICT} {{\"ok\": true}}\n", False, "unreadable verdict line"),
    ],
)
def test_rank_verdict(log, ok, detail):
    got_ok, got_detail = _smoke.rank_verdict(log)
    assert got_ok is ok
    assert got_detail.startswith(detail)


def test_summary_orders_stages_and_narrows_health_to_the_job():
    ranks = [
        {"server": "s0", "device": 3, "rank": 1, "log": verdict_log()},
        {"server": "s0", "device": 1, "rank": 0, "log": verdict_log(ok=False, failed=[{"check": "server_id", "detail": "x"}])},
    ]
    stages = [
        {"stage": "launch", "ok": True, "detail": "job j"},
        {"stage": "rank_table", "ok": True, "detail": "2 ranks"},
        {"stage": "facts", "server": "s9", "ok": False, "detail": "Task failed: Action failed: hccn_tool not found"},
    ]
    summary = smoke_summary(ranks, health=ONE_BAD, stages=stages)
    table = [(r["stage"], r.get("server"), r.get("device"), r.get("rank"), r["result"]) for r in summary["rows"]]
    assert table == [
        ("facts", "s9", None, None, "FAIL"),
        ("health", "s0", 3, 1, "FAIL"),  # device 2 (Init) is not the job's: left out
        ("health", None, None, None, "FAIL"),  # cluster-wide findings stay
        ("rank_table", None, None, None, "OK"),
        ("launch", None, None, None, "OK"),
        ("rank", "s0", 1, 0, "FAIL"),
        ("rank", "s0", 3, 1, "OK"),
    ]
    assert summary["ok"] is False
    assert summary["failures"] == [
        "facts s9: hccn_tool not found",
        "health s0 device 3 rank 1: link DOWN - check the optics/cable of NPU 3 (eth3) and its switch port",
        "health: TLS switch differs between devices (on at s0 device 1)",
        "rank s0 device 1 rank 0: server_id: x",
    ]


def test_summary_without_a_job_reports_every_bad_device_and_no_rank():
    summary = smoke_summary([], health=ONE_BAD, stages=[{"stage": "rank_table", "ok": False, "detail": "np=17 is not possible"}])
    assert [(r["stage"], r.get("device"), r["result"]) for r in summary["rows"]] == [
        ("health", 3, "FAIL"),
        ("health", 2, "FAIL"),
        ("health", None, "FAIL"),
        ("rank_table", None, "FAIL"),
    ]
    assert summary["rows"][1]["detail"] == "Init - still Init"


def test_summary_all_good_and_not_launched():
    ranks = [{"server": "s0", "device": d, "rank": d, "log": ""} for d in range(4)]
    summary = smoke_summary(ranks, health=HEALTHY, stages=[{"stage": "rank_table", "ok": True, "detail": "4 ranks"}], launched=False)
    assert summary == {
        "ok": True,
        "failures": [],
        "rows": [
            {"stage": "health", "result": "OK", "detail": "4 device(s): device IP, link UP, net_health Success"},
            {"stage": "rank_table", "server": None, "device": None, "rank": None, "result": "OK", "detail": "4 ranks"},
        ],
    }


@pytest.mark.parametrize(
    "msg, clean",
    [
        (
            "Task failed: Finalization of task args for 'ansible.builtin.set_fact' failed: Error while resolving value for "
            "'ascend_job_servers': The filter plugin 'ascend.cluster.select_devices' failed: select_devices: np=17 is not possible",
            "select_devices: np=17 is not possible",
        ),
        ("Task failed: Action failed: devices in use", "devices in use"),
        ("plain words", "plain words"),
    ],
)
def test_stage_messages_lose_ansibles_wrapping(msg, clean):
    assert _smoke.stage_message(msg) == clean


@pytest.mark.parametrize(
    "args, kwargs, message",
    [
        ("s0", {}, "the input must be a list of ranks"),
        ([{"server": "s0"}], {}, "rank entry 0 needs server, device and rank"),
        ([], {"stages": "rank_table"}, "stages must be a list"),
        ([], {"stages": [{"ok": True}]}, "stages entry 0 is not a mapping with a stage name"),
        ([], {"health": ["x"]}, "health must be the net_health_report result"),
    ],
)
def test_summary_bad_input_is_named(args, kwargs, message):
    with pytest.raises(AnsibleFilterError, match=f"smoke_summary: {re.escape(message)}"):
        smoke_summary(args, **kwargs)


# ---- smoke_report: the stages' findings gathered from the play's hosts ---------------------

FACTS_OK = {"changed": False, "ascend_facts": {}}


def two_servers(**per_host):
    """hostvars of two healthy servers with 2 ranks each; ``per_host`` overrides one server's vars."""
    hostvars = {
        "s0": {"_ascend_smoke_facts": FACTS_OK, "ascend_local_ranks": [{"rank_id": 0, "device_id": 0}, {"rank_id": 1, "device_id": 1}]},
        "s1": {"_ascend_smoke_facts": FACTS_OK, "ascend_local_ranks": [{"rank_id": 2, "device_id": 0}, {"rank_id": 3, "device_id": 1}]},
    }
    for host, values in per_host.items():
        hostvars[host] = dict(hostvars[host], **values)
    return hostvars


TABLE = {"rank_size": 4, "servers": 2, "path": "/etc/rank_table.json"}


def write_logs(logs_dir: Path, bad_rank=None):
    for host, ranks in (("s0", (0, 1)), ("s1", (2, 3))):
        (logs_dir / host).mkdir(parents=True)
        for rank in ranks:
            failed = [{"check": "device_id", "detail": "x"}] if rank == bad_rank else []
            (logs_dir / host / f"device_{rank}.log").write_text(verdict_log(ok=not failed, failed=failed))


def rows_of(report):
    return [(r["stage"], r.get("server"), r.get("rank"), r["result"], r["detail"]) for r in report["rows"]]


def test_report_of_a_healthy_run_reads_every_ranks_log(tmp_path):
    write_logs(tmp_path, bad_rank=3)
    report = smoke_report(["s0", "s1"], two_servers(), logs_dir=str(tmp_path), health=HEALTHY, table=TABLE, job_id="smoke-1")
    assert rows_of(report) == [
        ("health", None, None, "OK", "4 device(s): device IP, link UP, net_health Success"),
        ("rank_table", None, None, "OK", "4 ranks on 2 server(s), /etc/rank_table.json"),
        ("launch", None, None, "OK", "job smoke-1"),
        ("rank", "s0", 0, "OK", "7 checks passed"),
        ("rank", "s0", 1, "OK", "7 checks passed"),
        ("rank", "s1", 2, "OK", "7 checks passed"),
        ("rank", "s1", 3, "FAIL", "device_id: x"),
    ]
    assert report["failures"] == ["rank s1 device 1 rank 3: device_id: x"]
    # the document: one line, the finding first in the table, OK rows beyond ok_rows counted
    assert (report["schema"], report["kind"], report["job_id"], report["check_mode"]) == (1, "smoke", "smoke-1", False)
    assert report["line"] == "FAILED: smoke smoke-1: 1 finding(s): rank s1 device 1 rank 3: device_id: x"
    short = smoke_report(["s0", "s1"], two_servers(), logs_dir=str(tmp_path), health=HEALTHY, table=TABLE, job_id="smoke-1", ok_rows=2)
    assert short["table"][1].split()[:5] == ["rank", "s1", "1", "3", "FAIL"]
    assert short["table"][-1] == "... 4 more row(s) with RESULT OK; -e ascend_report_all_rows=true lists them"
    assert len(short["table"]) == 1 + 1 + 2 + 1
    everything = smoke_report(["s0", "s1"], two_servers(), logs_dir=str(tmp_path), health=HEALTHY, table=TABLE, job_id="s", all_rows=True)
    assert len(everything["table"]) == 1 + 7


def job_of(job_id, states, fail_fast=False):
    """The launch's summary of the smoke job (ascend_job_summary) with ranks 0-3 in ``states``."""
    return {"job_id": job_id, "fail_fast": fail_fast, "ranks": [{"rank_id": r, "state": s} for r, s in enumerate(states)]}


def test_a_launch_that_ran_every_rank_to_its_end_is_no_finding_its_ranks_verdicts_are(tmp_path):
    """The smoke launches its check with fail-fast off: rank 3's failed check (exit 1) failed the job - the launch's
    error on every server - but stopped no other rank; the finding is rank 3's verdict, the launch row is OK."""
    write_logs(tmp_path, bad_rank=3)
    failed = two_servers(s0={"_ascend_smoke_launch_error": "FAILED: train smoke-1: rank 3 ..."}, s1={"_ascend_smoke_launch_error": ""})
    job = job_of("smoke-1", ["done", "done", "done", "failed"])
    report = smoke_report(["s0", "s1"], failed, logs_dir=str(tmp_path), health=HEALTHY, table=TABLE, job_id="smoke-1", job=job)
    # as a run whose launch did not fail: the launch row OK, one row per rank from its verdict, rank 3's the finding
    unfailed = smoke_report(["s0", "s1"], two_servers(), logs_dir=str(tmp_path), health=HEALTHY, table=TABLE, job_id="smoke-1")
    assert rows_of(report) == rows_of(unfailed) and ("launch", None, None, "OK", "job smoke-1") in rows_of(report)
    assert report["failures"] == ["rank s1 device 1 rank 3: device_id: x"]
    # a rank that was stopped or lost, a job that failed fast, or another job's summary: the launch itself failed
    for other in (
        job_of("smoke-1", ["done", "stopped", "done", "failed"]),
        job_of("smoke-1", ["done", "done", "done", "failed"], fail_fast=True),
        job_of("smoke-1-collective", ["done", "done", "done", "failed"]),
        job_of("smoke-1", []),
        None,
    ):
        found = smoke_report(["s0", "s1"], failed, logs_dir=str(tmp_path), health=HEALTHY, table=TABLE, job_id="smoke-1", job=other)
        assert [(r[0], r[1], r[3]) for r in rows_of(found)[2:]] == [("launch", "s0", "FAIL")], other


def test_the_line_of_a_healthy_run_and_of_check_mode(tmp_path):
    write_logs(tmp_path, bad_rank=None)
    report = smoke_report(["s0", "s1"], two_servers(), logs_dir=str(tmp_path), health=HEALTHY, table=TABLE, job_id="smoke-1")
    assert report["ok"] and report["line"] == "smoke smoke-1: 4/4 ranks OK, health OK, rank table OK"
    checked = smoke_report(["s0", "s1"], two_servers(), logs_dir=str(tmp_path), health=HEALTHY, table=TABLE, job_id="s", check_mode=True)
    assert checked["line"] == "smoke s: not launched (check mode), health OK, rank table OK"


@pytest.mark.parametrize(
    "hostvars, kwargs, rows",
    [
        (  # a server whose facts stage failed, one that never got there (unreachable: no result at all)
            two_servers(s0={"_ascend_smoke_facts": {"failed": True, "msg": "hccn_tool not found"}}, s1={"_ascend_smoke_facts": None}),
            {"table_error": "np=5 is not possible"},
            [
                ("facts", "s0", None, "FAIL", "hccn_tool not found"),
                ("facts", "s1", None, "FAIL", "unreachable or failed before the smoke check"),
                ("rank_table", None, None, "FAIL", "np=5 is not possible"),
            ],
        ),
        (  # unreachable result, and the health stage's own failure
            two_servers(s1={"_ascend_smoke_facts": {"unreachable": True, "msg": "ssh: connect to host s1 port 22: No route"}}),
            {"health_error": "the health stage failed"},
            [
                ("facts", "s1", None, "FAIL", "ssh: connect to host s1 port 22: No route"),
                ("health", None, None, "FAIL", "the health stage failed"),
            ],
        ),
        (  # the launch failed on s1 (named); s0 was only stopped because of it (empty message): no rank rows
            two_servers(s0={"_ascend_smoke_launch_error": ""}, s1={"_ascend_smoke_launch_error": "device 1 is locked by job x"}),
            {"table": TABLE},
            [
                ("rank_table", None, None, "OK", "4 ranks on 2 server(s), /etc/rank_table.json"),
                ("launch", "s1", None, "FAIL", "device 1 is locked by job x"),
            ],
        ),
        (  # every server only says "failed", none names why
            two_servers(s0={"_ascend_smoke_launch_error": ""}),
            {"table": TABLE},
            [
                ("rank_table", None, None, "OK", "4 ranks on 2 server(s), /etc/rank_table.json"),
                ("launch", None, None, "FAIL", "the launch failed (see the task output above)"),
            ],
        ),
        (  # check mode: the table is planned, nothing is launched and no log is read
            two_servers(),
            {"table": TABLE, "check_mode": True},
            [("rank_table", None, None, "OK", "4 ranks on 2 server(s), /etc/rank_table.json")],
        ),
    ],
    ids=["facts failed or missing", "unreachable and health failed", "launch failed, named", "launch failed, unnamed", "check mode"],
)
def test_report_of_failed_stages(tmp_path, hostvars, kwargs, rows):
    report = smoke_report(["s0", "s1"], hostvars, logs_dir=str(tmp_path), **kwargs)
    assert rows_of(report) == rows
    assert report["ok"] is False or rows == [("rank_table", None, None, "OK", "4 ranks on 2 server(s), /etc/rank_table.json")]


def test_report_of_a_launched_run_whose_logs_were_not_fetched(tmp_path):
    report = smoke_report(["s0"], two_servers(), logs_dir=str(tmp_path / "missing"), table=TABLE, job_id="j")
    assert [(r["rank"], r["result"]) for r in report["rows"] if r["stage"] == "rank"] == [(0, "FAIL"), (1, "FAIL")]
    assert (
        report["failures"][0]
        == "rank s0 device 0 rank 0: no verdict: the rank wrote nothing (did the check start? see the launch row and the rank's log)"
    )


@pytest.mark.parametrize(
    "hosts, hostvars, message",
    [
        ("s0", {}, "the input must be the play's host names"),
        (["s9"], {"s0": {}}, "host 's9' is not in hostvars"),
    ],
)
def test_report_bad_input_is_named(tmp_path, hosts, hostvars, message):
    with pytest.raises(AnsibleFilterError, match=f"smoke_report: {re.escape(message)}"):
        smoke_report(hosts, hostvars, logs_dir=str(tmp_path))


# ---- the collective stage (the HCCL stand-in's links against the floor) ----------------------


def standin_log(rank, links, last="hccl_standin: all-reduce ... result verified"):
    """A stand-in rank's log: its links as ``(to_rank, mb_per_s)``, the result line last (as examples/train/hccl_standin.py writes it)."""
    result = {
        "rank": rank,
        "links": [
            {
                "ring": "plane 0 ring",
                "from_rank": rank,
                "from_ip": f"198.19.0.{rank + 1}",
                "to_rank": to,
                "to_ip": f"198.19.0.{to + 1}",
                "mb_per_s": mbps,
            }
            for to, mbps in links
        ],
    }
    return f"{last}\n{_smoke.STANDIN_RESULT} {json.dumps(result)}\n"


def test_the_stand_in_and_the_summary_agree_on_the_result_line():
    standin = (Path(__file__).resolve().parents[4] / "examples" / "train" / "hccl_standin.py").read_text()
    assert f'RESULT_PREFIX = "{_smoke.STANDIN_RESULT}"' in standin
    for key in ("ring", "from_ip", "to_rank", "to_ip", "mb_per_s"):
        assert f'"{key}":' in standin


def test_collective_rows_name_each_link_below_the_floor():
    ranks = [
        {"server": "s0", "device": 0, "rank": 0, "log": standin_log(0, [(1, 812.5)])},
        {"server": "s1", "device": 0, "rank": 1, "log": standin_log(1, [(0, 12.25)])},
        {"server": "s1", "device": 1, "rank": 2, "log": "hccl_standin: rank 2/3 ...\nhccl_standin: EI0006 socket timeout: rank 2 ..."},
        {"server": "s1", "device": 2, "rank": 3, "log": f"{_smoke.STANDIN_RESULT} {{not json"},
    ]
    assert [(r["rank"], r["result"], r["detail"]) for r in _smoke.collective_rows(ranks, floor=50)] == [
        (0, "OK", "link 198.19.0.1 -> rank 1 198.19.0.2 (plane 0 ring): 812.5 MB/s"),
        (1, "FAIL", "link 198.19.0.2 -> rank 0 198.19.0.1 (plane 0 ring): 12.2 MB/s, below the floor of 50 MB/s"),
        (2, "FAIL", "no result; the rank's last line: hccl_standin: EI0006 socket timeout: rank 2 ..."),
        (
            3,
            "FAIL",
            "unreadable result line (Expecting property name enclosed in double quotes: line 1 column 2 (char 1)): "
            f"{_smoke.STANDIN_RESULT} {{not json",
        ),
    ]
    assert _smoke.collective_rows(ranks[:1], floor=1000000)[0]["detail"].endswith(", below the floor of 1000000 MB/s")
    assert _smoke.collective_rows(ranks[:1], floor=812.75)[0]["detail"].endswith(", below the floor of 812.75 MB/s")
    assert _smoke.collective_rows(ranks[:2], floor=0)[1]["result"] == "OK"  # no floor: any bandwidth is reported, none refused


def test_report_with_the_collective_stage(tmp_path):
    write_logs(tmp_path / "check")
    for host, ranks in (("s0", (0, 1)), ("s1", (2, 3))):
        (tmp_path / "coll" / host).mkdir(parents=True)
        for rank in ranks:
            (tmp_path / "coll" / host / f"device_{rank}.log").write_text(standin_log(rank, [((rank + 1) % 4, 100.0 if rank != 2 else 9.5)]))
    args = (["s0", "s1"], two_servers())
    common = {"logs_dir": str(tmp_path / "check"), "health": HEALTHY, "table": TABLE, "job_id": "smoke-1"}
    passed = smoke_report(*args, **common, collective={"job_id": "smoke-1-collective", "logs_dir": str(tmp_path / "coll"), "floor": 5})
    assert passed["ok"] and passed["line"] == "smoke smoke-1: 4/4 ranks OK, health OK, rank table OK, collective OK"
    assert [r["stage"] for r in passed["rows"]][-4:] == ["collective"] * 4
    slow = smoke_report(*args, **common, collective={"job_id": "smoke-1-collective", "logs_dir": str(tmp_path / "coll"), "floor": 10})
    assert slow["failures"] == [
        "collective s1 device 0 rank 2: link 198.19.0.3 -> rank 3 198.19.0.4 (plane 0 ring): 9.5 MB/s, below the floor of 10 MB/s"
    ]
    failed = smoke_report(
        *args,
        **common,
        collective={"job_id": "j", "logs_dir": str(tmp_path / "none"), "error": "Task failed: FAILED: train j: rank 2 ... EI0006"},
    )
    assert failed["failures"] == ["collective: FAILED: train j: rank 2 ... EI0006"]
    with pytest.raises(AnsibleFilterError, match="collective must be"):
        smoke_report(*args, **common, collective={"floor": 1})


# ---- the collective stage on real NPUs (CANN's hccl_test, plugin_utils/_net/hccl_test.py) -------------

GUIDE_EXAMPLE = (Path(__file__).parent / "hccl_test_outputs" / "guide_example_8npu.txt").read_text()
RETCODE_7 = (Path(__file__).parent / "hccl_test_outputs" / "retcode7_init_hcclcomm.txt").read_text()


def hccl_test_run(stdout=GUIDE_EXAMPLE, rc=0, devices=(0, 1), **extra):
    return dict({"rc": rc, "stdout": stdout, "stderr": "", "devices": list(devices)}, **extra)


def test_report_with_hccl_test_runs_a_row_per_server_and_one_for_the_job(tmp_path):
    write_logs(tmp_path / "check")
    hostfile = "10.0.0.1:2\n10.0.0.2:2\n"
    hostvars = two_servers(
        s0={"_ascend_smoke_hccl_test": {"server": hccl_test_run(), "cluster": hccl_test_run(np=4, hostfile=hostfile)}},
        s1={"_ascend_smoke_hccl_test": {"server": hccl_test_run(), "cluster": None}},
    )
    common = {"logs_dir": str(tmp_path / "check"), "health": HEALTHY, "table": TABLE, "job_id": "smoke-1"}
    passed = smoke_report(["s0", "s1"], hostvars, **common, collective={"mode": "hccl_test", "min_gbps": 20})
    assert passed["ok"] and passed["line"] == "smoke smoke-1: 4/4 ranks OK, health OK, rank table OK, collective OK"
    assert [(r["server"], r["result"], r["detail"]) for r in passed["rows"] if r["stage"] == "collective"] == [
        ("s0", "OK", "devices 0,1: all_reduce_test on 2 NPU(s): 23.76 GB/s alg_bandwidth at 67108864 bytes, avg 2630.20 us, check success"),
        ("s1", "OK", "devices 0,1: all_reduce_test on 2 NPU(s): 23.76 GB/s alg_bandwidth at 67108864 bytes, avg 2630.20 us, check success"),
        (
            None,
            "OK",
            "all 2 servers: all_reduce_test on 4 NPU(s): 23.76 GB/s alg_bandwidth at 67108864 bytes, avg 2630.20 us, check success",
        ),
    ]
    below = smoke_report(["s0", "s1"], hostvars, **common, collective={"mode": "hccl_test", "min_gbps": 25})
    assert len(below["failures"]) == 3
    assert below["failures"][0] == (
        "collective s0: devices 0,1: all_reduce_test on 2 NPU(s): 23.76 GB/s alg_bandwidth at 67108864 bytes, avg 2630.20 us, "
        "check success, below the floor of 25 GB/s"
    )
    hostvars["s1"]["_ascend_smoke_hccl_test"] = {"server": hccl_test_run(stdout=RETCODE_7, rc=1), "cluster": None}
    failed = smoke_report(["s0", "s1"], hostvars, **common, collective={"mode": "hccl_test", "min_gbps": 0})
    assert failed["failures"] == [
        "collective s1: devices 0,1: all_reduce_test on 2 NPU(s): exit 1: hccl interface return err "
        "./common/src/hccl_test_common.cc:538, retcode: 7 / This is an error in init_hcclComm."
    ]
    refused = smoke_report(
        ["s0", "s1"],
        hostvars,
        **common,
        collective={"mode": "hccl_test", "error": "auto: CANN's hccl_test is not installed on s1 (...)"},
    )
    assert refused["failures"] == ["collective: auto: CANN's hccl_test is not installed on s1 (...)"]
