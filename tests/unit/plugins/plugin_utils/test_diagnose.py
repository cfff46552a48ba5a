"""plugin_utils._launch.diagnosis: the first Ascend error of a rank from real error texts, and the diagnosis of a job."""

from __future__ import annotations

import importlib.util
import json
import sys
from typing import Any

import pytest

from ansible_collections.ascend.cluster.plugins.plugin_utils._launch import diagnosis as dg
from ansible_collections.ascend.cluster.plugins.plugin_utils._launch import rank_error
from tests.helpers import corpus
from tests.helpers.collection import REPO_ROOT

_spec = importlib.util.spec_from_file_location("hccl_standin", REPO_ROOT / "examples" / "train" / "hccl_standin.py")
assert _spec and _spec.loader
hs = importlib.util.module_from_spec(_spec)
sys.modules.setdefault("hccl_standin", hs)  # NamedTuple needs its module importable
_spec.loader.exec_module(hs)

# Reference section 7, verbatim.
PLOG_WAIT = (
    "[ERROR] HCCL(2717288,python3):2025-07-23-03:49:57.177.194 [hccl_socket_manager.cc:778] [2734049][Wait][LinkEstablish]"
    "wait socket establish timeout, role[1] rank[12] timeout[120]"
)
EI0006_PID = (
    "EI0006: [PID: 1292363] 2025-04-08-18:07:20.444.436 Getting socket times out. Reason: Remote Rank did not send the data in time. "
    "Please check the reason for the rank being stuck"
)
EI0006_OLD = (
    "EI0006: 2025-04-08-18:07:20.444.436 Getting socket times out. Reason: Remote Rank did not send the data in time. "
    "Please check the reason for the rank being stuck"
)
SOLUTION = (
    "        Solution: 1. ... 2. If this error is reported for all NPUs, check whether the time difference between the earliest and "
    "latest errors is greater than the connect timeout interval (120s by default) ..."
)
TORCH = [
    "RuntimeError: HcclAllreduce, error code is 6",
    "[ERROR] 2025-04-08-18:07:20 (PID:1292363, Device:3, RankID:11) ERR01100 OPS call acl api failed",
]


def _standin(error: Any, pid: int = 4242, when: float = 1_800_000_000.25) -> tuple:
    """The stand-in's stderr lines and plog lines for ``error``, as a failing rank writes them."""
    log = ["hccl_standin: rank 3 starting"] + hs.error_block(error, pid, when)
    plog = [hs.plog_line("ERROR", pid, "python3", when, s, t) for s, t in error.log_lines]
    plog.append(hs.plog_line("ERROR", pid, "python3", when, "hccl_standin.py:error", "%s %s" % (error.code, error.reason)))
    return log, plog


def _cut_link() -> Any:
    me = hs.Rank(3, "10.0.0.1", 3, "198.19.3.1", 16666)
    peer = hs.Rank(11, "10.0.0.2", 3, "198.19.3.2", 16666)
    ring = hs.Ring(3, "plane 3 ring", (3, 11))
    return hs.socket_timeout_error(me, [hs.Link(ring, me, peer, True), hs.Link(ring, me, peer, False)], 20)


CASES: list[tuple[Any, ...]] = [
    # (id, log lines, plog lines, code, time, inferred, peers [(rank, ip, port)])
    ("block with PID", ["Traceback ...", EI0006_PID, SOLUTION], [], "EI0006", "2025-04-08-18:07:20.444.436", False, []),
    ("older CANN: no PID", [EI0006_OLD, SOLUTION], [], "EI0006", "2025-04-08-18:07:20.444.436", False, []),
    # The wait line's rank[12] is the waiting rank itself (its LINK_ERROR_INFO's src_ip(user_rank)), never a peer.
    ("block + plog: the wait line names no peer", [EI0006_PID], [PLOG_WAIT], "EI0006", "2025-04-08-18:07:20.444.436", False, []),
    (
        "summary name only",
        ["E   Communication_Error_Get_Socket(EI0006)"],
        [PLOG_WAIT],
        "EI0006",
        "2025-07-23-03:49:57.177.194",
        False,
        [],
    ),
    ("plog only: code inferred from the HCCL text", [], [PLOG_WAIT], "EI0006", "2025-07-23-03:49:57.177.194", True, []),
    ("torch_npu only", TORCH, [], "HCCL", None, True, []),
    ("torch_npu after the block: the block wins", TORCH[:1] + [EI0006_PID], [], "EI0006", "2025-04-08-18:07:20.444.436", False, []),
    (
        "listen text without code",
        ["[ERROR] HCCL(7,python3):2025-04-08-18:07:21.000.001 [hccl_socket.cc:1] listen on ip[198.19.3.1] and specific port[16666] fail"],
        [],
        "EI0019",
        "2025-04-08-18:07:21.000.001",  # a plog line printed into the log (ASCEND_SLOG_PRINT_TO_STDOUT) gives its time
        True,
        [],
    ),
    ("EJ0001 text only", ["Device 3 is held. Maybe the last training process is running"], [], "EJ0001", None, True, []),
    ("EI0014 text only", ["device_ip is invalid in ranktable"], [], "EI0014", None, True, []),
    (
        "a code the reference does not list",
        ["EZ9999: [PID: 1] 2025-04-08-18:07:20.444.436 something else"],
        [],
        "EZ9999",
        "2025-04-08-18:07:20.444.436",
        False,
        [],
    ),
]


@pytest.mark.parametrize("log, plog, code, when, inferred, peers", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_first_error_of_real_texts(log: list, plog: list, code: str, when: str | None, inferred: bool, peers: list) -> None:
    found = rank_error.first_error(log, plog)
    assert found is not None
    assert (found["code"], found["time"], found["inferred"]) == (code, when, inferred)
    assert [(p["rank"], p["ip"], p["port"]) for p in found["peers"]] == peers


def test_summary_name_is_kept_with_the_block() -> None:
    found = rank_error.first_error([EI0006_PID, "Communication_Error_Get_Socket(EI0006)"], [])
    assert found and found["summary"] == "Communication_Error_Get_Socket" and found["clock"] == "18:07:20"


@pytest.mark.parametrize("log, plog", [([], []), (["loss 0.1", "RuntimeError: out of memory"], ["[INFO] HCCL(1,p):bad"]), (None, None)])
def test_no_error_is_none(log: list | None, plog: list | None) -> None:
    assert rank_error.first_error(log or [], plog) is None


def test_standin_cut_link_names_the_peer_ip_port_and_rank() -> None:
    log, plog = _standin(_cut_link())
    found = rank_error.first_error(log, plog)
    assert found is not None
    assert found["code"] == "EI0006" and not found["inferred"] and found["message"].startswith("Getting socket times out")
    assert [(p["rank"], p["ip"], p["port"]) for p in found["peers"]] == [(11, "198.19.3.2", 16666)]
    assert found["local_ip"] == "198.19.3.1"
    assert found["time"] == hs.cann_time(1_800_000_000.25)


@pytest.mark.parametrize(
    "error, code, listen",
    [
        (hs.table_error(hs.DEVICE_IP_TEXT + ": device 3 of server 10.0.0.2 has '-.-.-.-'", "/t.json"), "EI0014", None),
        (hs.table_error(hs.RANK_ID_TEXT, "/t.json"), "EI0014", None),
        (hs.device_busy_error(3, "4242"), "EJ0001", None),
        (hs.listen_error("198.19.3.1", 16666, "the port is in use"), "EI0019", {"ip": "198.19.3.1", "port": 16666}),
    ],
)
def test_standin_other_codes(error: Any, code: str, listen: dict | None) -> None:
    log, plog = _standin(error)
    found = rank_error.first_error(log, plog)
    assert found and found["code"] == code and not found["inferred"] and found["listen"] == listen


def test_link_error_info_without_a_header_takes_local_then_remote() -> None:
    lines = ["LINK_ERROR_INFO:", "    0  198.19.3.1  16666  11  198.19.3.2  16666", "next"]
    assert rank_error.link_error_info(lines) == [
        {"local_ip": "198.19.3.1", "remote_ip": "198.19.3.2", "remote_rank": None, "remote_port": None}
    ]


def _finding(rank: int, server: str, device: int, error: dict | None, state: str = "failed", ended: float = 10.0) -> dict:
    return {"server": server, "rank_id": rank, "device_id": device, "state": state, "rc": 1, "ended": ended, "error": error}


def _live(**kw: dict) -> dict:
    devices = {
        server: {d: {"device_ip": "198.19.%d.%d" % (d, host), "link": "UP", "net_health": "Success", "tls_switch": False} for d in range(8)}
        for host, server in ((1, "h1"), (2, "h2"))
    }
    live: dict = {"devices": devices, "firewall": {"h1": "ufw inactive", "h2": "ufw inactive"}, "clock": {"h1": 0.0, "h2": 0.01}}
    live.update(kw)
    return live


def test_cut_link_is_named_first_with_its_host_and_nic() -> None:
    log, plog = _standin(_cut_link())
    live = _live()
    live["devices"]["h2"][3]["link"] = "DOWN"
    rank3 = _finding(3, "h1", 3, rank_error.first_error(log, plog))
    stopped = _finding(5, "h1", 5, None, state="stopped")
    out = dg.diagnose([stopped, rank3], live)
    assert out["line"] == "EI0006 on rank 3 from %s: h2 eth3 link DOWN - check the optics/cable" % hs.cann_time(1_800_000_000.25)[11:19]
    [row] = out["rows"]
    assert row["first_rank"] == "rank 3 (h1 device 3)" and row["likely_causes"][1] == rank_error.CODES["EI0006"]["causes"][0]
    assert out["involved"] == [["h1", 3], ["h2", 3]]


def test_a_real_ei0006_plog_names_its_peers_device_not_the_waiting_rank_itself() -> None:
    # vllm-ascend#9447's plog: rank 0 (10.20.0.2) waits for rank 29 (10.20.0.31); the wait line's rank[0] is rank 0 itself.
    [entry] = [e for e in corpus.index("logs") if e["file"] == "plog_ei0006_link_error_info_a3_vllm_ascend_9447.log"]
    error = rank_error.first_error([], corpus.text("logs", entry).splitlines())
    live = _live()
    live["devices"]["h1"][0]["device_ip"] = "10.20.0.2"
    live["devices"]["h2"][5]["device_ip"] = "10.20.0.31"
    live["devices"]["h2"][5]["link"] = "DOWN"
    out = dg.diagnose([_finding(0, "h1", 0, error)], live)
    assert out["involved"] == [["h1", 0], ["h2", 5]]
    assert (
        out["line"]
        == "EI0006 on rank 0 from 21:39:58: h2 eth5 link DOWN - check the optics/cable (cause inferred: the reference does not give this text's code)"
    )


def test_every_rank_of_a_server_in_one_row_with_a_range() -> None:
    error = rank_error.first_error([EI0006_PID], [])
    out = dg.diagnose([_finding(r, "h2", r - 8, error) for r in range(8, 16)], _live())
    assert out["rows"][0]["ranks"] == "8-15"
    assert out["line"].startswith(
        "EI0006 on ranks 8-15 from 18:07:20: socket timeout"
    )  # nothing seen live: the meaning, then the usual cause


@pytest.mark.parametrize(
    "change, expected",
    [
        ({"firewall": {"h1": "ufw active", "h2": "ufw inactive"}}, "h1 firewall: ufw active - open the training ports"),
        ({"firewall": {"h1": "firewalld running"}}, "h1 firewall: firewalld running"),
        ({"clock": {"h2": -45.0}}, "h2 clock -45.0 s off the controller - fix NTP"),
        ({"devices": {"h1": {3: {"net_health": "Receive timeout"}}}}, "h1 device 3 net_health Receive timeout - check its path"),
        ({"devices": {"h1": {3: {"net_health": "Init", "netdetect": "198.19.3.254"}}}}, "h1 device 3 net_health Init - check its path"),
        ({"leftovers": {"h1": ["process 4242 (python3) holds NPU 3"]}}, "h1: process 4242 (python3) holds NPU 3 - ascend.cluster.stop"),
    ],
)
def test_live_evidence_comes_first(change: dict, expected: str) -> None:
    error = rank_error.first_error([EI0006_PID], [])
    out = dg.diagnose([_finding(3, "h1", 3, error)], _live(**change))
    assert out["rows"][0]["likely_causes"][0].startswith(expected), out
    assert expected in out["line"]


def test_net_health_init_without_a_netdetect_address_is_no_evidence() -> None:
    error = rank_error.first_error([EI0006_PID], [])
    out = dg.diagnose([_finding(3, "h1", 3, error)], _live(devices={"h1": {3: {"net_health": "Init", "netdetect": ""}}}))
    assert out["evidence"] == [] and out["rows"][0]["likely_causes"] == rank_error.CODES["EI0006"]["causes"]


def test_tls_switch_that_differs_between_the_devices_involved() -> None:
    log, plog = _standin(_cut_link())
    live = _live()
    live["devices"]["h2"][3]["tls_switch"] = True
    out = dg.diagnose([_finding(3, "h1", 3, rank_error.first_error(log, plog))], live)
    assert out["rows"][0]["seen_live"] == ["TLS switch differs: h1 device 3 off, h2 device 3 on - set the same TLS switch on every device"]


def test_first_failing_rank_by_time_and_silent_ranks_get_their_own_row() -> None:
    late = rank_error.first_error(["EJ0001: [PID: 9] 2025-04-08-18:09:00.000.000 Maybe the last training process is running"], [])
    early = rank_error.first_error([EI0006_OLD], [])
    silent = dict(_finding(7, "h1", 7, None), cause="killed by SIGKILL (signal 9)")
    out = dg.diagnose([_finding(1, "h1", 1, late), _finding(2, "h1", 2, early), silent], _live(leftovers={"h1": ["process 1 holds NPU 1"]}))
    assert [r["code"] for r in out["rows"]] == ["EI0006", "EJ0001", None]
    assert out["rows"][1]["likely_causes"][0].startswith("h1: process 1 holds NPU 1")
    assert out["rows"][2]["likely_causes"] == [
        "killed by SIGKILL (signal 9)",
        "h1: process 1 holds NPU 1 - ascend.cluster.stop, or kill it",
    ]


def _ei0006(rank: int, server: str, cann: str, ended: float, offset: float) -> dict:
    """Rank ``rank`` of ``server`` failed with EI0006 at ``cann`` (its log's time) and ended at ``ended``, both in its
    server's clock, which is ``offset`` s ahead of the controller's (recorded in its state.json)."""
    error = rank_error.first_error([f"EI0006: [PID: 7] {cann} Getting socket times out."], [])
    return dict(_finding(rank, server, 3, error, ended=ended), clock_offset=offset)


# A cut link fails ranks 3 (h1) and 11 (h2) 29 ms apart, 11 first; h2's clock runs 20 s ahead, so in their servers'
# own clocks rank 11's error and end read 20 s later than rank 3's.
TWO_AT_ONCE = [
    _ei0006(3, "h1", "2025-04-08-18:07:20.029.000", 1_000.029, 0.0),
    _ei0006(11, "h2", "2025-04-08-18:07:40.000.000", 1_020.000, 20.0),
]


def test_two_ranks_failing_29_ms_apart_the_first_is_by_the_controllers_clock_not_the_servers() -> None:
    out = dg.diagnose(TWO_AT_ONCE, _live())
    [row] = out["rows"]
    assert row["first_rank"] == "rank 11 (h2 device 3)" and row["ranks"] == "3, 11", row
    assert out["first"] == {"rank_id": 11, "server": "h2", "device_id": 3, "by": dg.CLOCK}
    assert row["from"] == "18:07:40"  # the first rank's own time, as its log has it


def test_the_rank_the_jobs_group_named_first_is_the_first_failing_rank() -> None:
    """The FAILED line names the group's cause (the first abort line to reach its coordinator): diagnose names the same."""
    out = dg.diagnose(TWO_AT_ONCE, _live(), first_rank=3)
    assert out["rows"][0]["first_rank"] == "rank 3 (h1 device 3)" and out["rows"][0]["from"] == "18:07:20"
    assert out["first"] == {"rank_id": 3, "server": "h1", "device_id": 3, "by": dg.GROUP}
    # a rank that logged no code, named first by the group: its row leads, before the codes its peers logged after it
    crashed = dict(_finding(5, "h1", 5, None, ended=1_000.5), cause="killed by SIGSEGV (signal 11)", last_line="Segmentation fault")
    out = dg.diagnose([*TWO_AT_ONCE, crashed], _live(), first_rank=5)
    assert [row["code"] for row in out["rows"]] == [None, "EI0006"] and out["line"].startswith(
        "no Ascend error code on rank 5: killed by SIGSEGV"
    )
    assert [row["code"] for row in dg.diagnose([*TWO_AT_ONCE, crashed], _live())["rows"]] == ["EI0006", None]  # by the clock


@pytest.mark.parametrize(
    "cause, rank",
    [
        ({"rank_id": 3, "server": "10.0.0.1", "rc": 1}, 3),
        ({"rank_id": -1, "stopped_by": "stopped by ascend.cluster.stop, run by alice"}, None),
        ({"rank_id": -1, "lost": [8, 9], "error": "stopped answering"}, None),
        ({"rank_id": -1, "error": "servers h3 did not join the job's group"}, None),
        (None, None),
        ("rank 3", None),
    ],
)
def test_the_rank_a_groups_cause_names(cause: Any, rank: int | None) -> None:
    assert dg.group_first_rank(cause) == rank


def test_from_hostvars_takes_the_groups_cause_from_rank_0s_server_else_from_the_controllers_copy() -> None:
    def ranks(*findings: dict) -> list:
        return [dict(f, tail=[f"EI0006: [PID: 7] {f['error']['time']} Getting socket times out."]) for f in findings]

    names = {"job": "_ascend_diag", "npu": "_ascend_diag_npu", "clock": "_ascend_diag_clock", "firewall": "_ascend_diag_firewall"}
    h1: dict = {"job_id": "j", "ranks": ranks(TWO_AT_ONCE[0])}
    h2: dict = {"job_id": "j", "ranks": ranks(TWO_AT_ONCE[1])}
    hostvars = {"h1": {"_ascend_diag": h1}, "h2": {"_ascend_diag": h2}}
    by_clock = dg.from_hostvars(["h1", "h2"], hostvars, names)
    assert by_clock["first"]["rank_id"] == 11 and by_clock["group_cause"] is None  # no group view: the corrected order
    cause = {"rank_id": 3, "server": "10.0.0.1", "host": "h1", "device_id": 3, "rc": 1, "tail": ["..."]}
    view = json.dumps({"status": "ended", "cause": cause})
    kept = dg.from_hostvars(["h1", "h2"], hostvars, names, group_view=view)  # the copy the watch kept on the controller
    assert kept["first"] == {"rank_id": 3, "server": "h1", "device_id": 3, "by": dg.GROUP} and "tail" not in kept["group_cause"]
    assert dg.from_hostvars(["h1", "h2"], hostvars, names, group_view="not json")["first"]["by"] == dg.CLOCK
    h1["group_cause"] = dict(cause, rank_id=11)  # rank 0's server's own group.json wins over the controller's copy
    assert dg.from_hostvars(["h1", "h2"], hostvars, names, group_view=view)["first"] == {
        "rank_id": 11,
        "server": "h2",
        "device_id": 3,
        "by": dg.GROUP,
    }


def test_a_failed_rank_without_a_code_is_named_with_how_it_ended_and_its_last_line() -> None:
    out = dg.diagnose([dict(_finding(11, "h2", 3, None), last_line="rank 11 crashing at step 1")], _live())
    assert out["line"] == "no Ascend error code on rank 11: exit code 1; its log ends: rank 11 crashing at step 1"
    assert out["involved"] == [["h2", 3]]


def test_a_failed_rank_that_wrote_torchs_error_file_is_named_with_its_exception_not_its_last_line() -> None:
    error = {
        "exception": "ValueError: batch 17 has NaN labels",
        "traceback": [
            "Traceback (most recent call last):",
            '  File "/data/train.py", line 41, in main',
            "ValueError: batch 17 has NaN labels",
        ],
        "timestamp": 1795436105,
        "error_code": None,
        "path": "/runs/j/device_11/error.json",
    }
    finding = dict(_finding(11, "h2", 3, None), last_line="[rank11]: ValueError: batch 17 has NaN labels", torch_error=error)
    out = dg.diagnose([finding], _live())
    assert out["line"] == (
        "no Ascend error code on rank 11: exit code 1: it raised ValueError: batch 17 has NaN labels"
        ' at File "/data/train.py", line 41, in main (torch\'s error file /runs/j/device_11/error.json)'
    )
    assert out["rows"][0]["message"] == "ValueError: batch 17 has NaN labels"


def test_a_stalled_rank_whose_log_ends_with_its_runners_note_is_told_once() -> None:
    cause = 'stalled: no progress for 600 s; last line: "step 2 loss 500"'
    finding = dict(_finding(3, "h2", 3, None), cause=cause, last_line=f"ascend.cluster: {cause}; stopping the rank")
    assert dg.diagnose([finding], _live())["line"] == f"no Ascend error code on rank 3: {cause}"


def test_inferred_and_unknown_codes_say_so() -> None:
    inferred = dg.diagnose([_finding(0, "h1", 0, rank_error.first_error([], [PLOG_WAIT]))], _live())
    assert inferred["rows"][0]["inferred"] and "(cause inferred" in inferred["line"]
    unknown = dg.diagnose([_finding(0, "h1", 0, rank_error.first_error(["EZ9999: 2025-04-08-18:07:20.444.436 x"], []))], _live())
    assert "EZ9999" in unknown["line"] and "not in the reference's list" in unknown["line"] and "(cause inferred)" in unknown["line"]


def test_nothing_to_diagnose() -> None:
    assert dg.diagnose([], {})["line"].startswith("no failed rank")
    assert dg.diagnose([_finding(1, "h1", 1, None, state="stopped")], None)["rows"] == []


def test_from_hostvars_reads_each_servers_registered_results() -> None:
    log, plog = _standin(_cut_link())
    rank3 = {
        "rank_id": 3,
        "device_id": 3,
        "state": "failed",
        "rc": 1,
        "ended": 5.0,
        "tail": log,
        "plog": {"files": ["/p/plog-4242_1.log"], "lines": plog},
    }
    done = {"rank_id": 0, "device_id": 0, "state": "done", "rc": 0, "tail": ["ok"]}
    stopped = {"rank_id": 11, "device_id": 3, "state": "stopped", "rc": -15, "tail": ["step 1"], "plog": {"files": [], "lines": []}}
    devices = [
        {"device_id": 3, "device_ip": "198.19.3.%d" % h, "link": "DOWN" if h == 2 else "UP", "net_health": "Success"} for h in (1, 2)
    ]
    hostvars = {
        "h1": {
            "_ascend_diag": {"job_id": "j", "ranks": [done, rank3], "busy": [], "ports_in_use": {"16666": "pid 9 (nc)"}},
            "_ascend_diag_npu": {"ansible_facts": {"ascend_npu": {"devices": devices[:1]}}},
            "_ascend_diag_clock": {"offset": 0.01},
            "_ascend_diag_firewall": {"failed": True, "msg": "unknown OS"},
        },
        "h2": {
            "_ascend_diag": {"job_id": "j", "ranks": [stopped], "busy": [{"detail": "locked by x"}], "ports_in_use": {}},
            "_ascend_diag_npu": {"ansible_facts": {"ascend_npu": {"devices": devices[1:]}}},
            "_ascend_diag_clock": {"skipped": True},
            "_ascend_diag_firewall": {"found": "ufw inactive"},
        },
        "h3": {"_ascend_diag": {"failed": True, "msg": "job j is not recorded under /jobs on this host"}},
    }
    names = {"job": "_ascend_diag", "npu": "_ascend_diag_npu", "clock": "_ascend_diag_clock", "firewall": "_ascend_diag_firewall"}
    out = dg.from_hostvars(["h1", "h2", "h3"], hostvars, names, 20)
    assert (
        out["job_id"] == "j"
        and out["line"].startswith("EI0006 on rank 3 from ")
        and out["line"].endswith(": h2 eth3 link DOWN - check the optics/cable")
    )
    assert [(r["rank_id"], r["code"], r["plog_files"]) for r in out["ranks"]] == [(3, "EI0006", ["/p/plog-4242_1.log"]), (11, None, [])]
    assert [(r["exception"], r["traceback"]) for r in out["ranks"]] == [(None, []), (None, [])]  # neither wrote torch's error file
    assert out["live"]["firewall"] == {"h1": "unknown: unknown OS", "h2": "ufw inactive"} and out["live"]["clock"] == {"h1": 0.01}
    assert out["rows"][0]["likely_causes"][:3] == [
        "h2 eth3 link DOWN - check the optics/cable",
        "h2: locked by x - ascend.cluster.stop, or kill it",
        rank_error.CODES["EI0006"]["causes"][0],
    ]  # a port in use is evidence for EI0019, not EI0006
    assert "h1: TCP port 16666 is listened on by pid 9 (nc) - stop it, or move the job's ports" in out["evidence"]
    assert out["table"][0].split() == ["CODE", "RANKS", "FROM", "FIRST_RANK", "MEANING", "LIKELY_CAUSES"]
    assert out["table"][1].startswith("EI0006  3 ") and "1. h2 eth3 link DOWN" in out["table"][1]
    assert out["table"][-1] == "h3: not read - job j is not recorded under /jobs on this host"


IPTABLES_DROP = "iptables (nf_tables) INPUT: -A INPUT -p tcp -m tcp --dport 16666 -j DROP drops incoming TCP port 16666"


def _job(ranks: list, **more: Any) -> dict:
    return dict({"job_id": "j", "ranks": ranks, "busy": [], "ports_in_use": {}}, **more)


def test_a_raw_iptables_drop_rule_is_named_first_for_ei0006_not_the_cabling() -> None:
    log, plog = _standin(_cut_link())
    rank3 = {"rank_id": 3, "device_id": 3, "state": "failed", "rc": 1, "ended": 5.0, "tail": log, "plog": {"files": [], "lines": plog}}
    devices = [{"device_id": 3, "device_ip": "198.19.3.%d" % h, "link": "UP", "net_health": "Success"} for h in (1, 2)]
    packet = {"found": IPTABLES_DROP, "blocks": [{"text": IPTABLES_DROP}], "read": ["iptables-nft-save", "nft"], "unread": []}
    hostvars = {
        "h1": {
            "_ascend_diag": _job(
                [rank3], packet_filter={"found": "iptables-nft-save, nft: nothing drops or rejects TCP 16666", "blocks": []}
            ),
            "_ascend_diag_npu": {"ansible_facts": {"ascend_npu": {"devices": devices[:1]}}},
            "_ascend_diag_firewall": {"found": "ufw inactive"},
        },
        "h2": {
            "_ascend_diag": _job([], packet_filter=packet, job_ports={"16666": "HCCL's device port"}),
            "_ascend_diag_npu": {"ansible_facts": {"ascend_npu": {"devices": devices[1:]}}},
            "_ascend_diag_firewall": {"found": "ufw inactive"},
        },
    }
    names = {"job": "_ascend_diag", "npu": "_ascend_diag_npu", "clock": "_ascend_diag_clock", "firewall": "_ascend_diag_firewall"}
    out = dg.from_hostvars(["h1", "h2"], hostvars, names, 20)
    named = "h2 packet filter: %s - delete the rule, or accept the job's ports before it" % IPTABLES_DROP
    assert out["line"].endswith(": " + named), out["line"]
    assert out["rows"][0]["seen_live"] == [named]
    assert out["live"]["firewall"]["h2"] == "ufw inactive; packet filter: " + IPTABLES_DROP
    assert out["live"]["firewall"]["h1"] == "ufw inactive; packet filter: iptables-nft-save, nft: nothing drops or rejects TCP 16666"
    assert out["live"]["job_ports"]["h2"] == {"16666": "HCCL's device port"}


def test_a_port_in_use_says_which_of_the_jobs_ports_it_is() -> None:
    error = rank_error.first_error([hs.error_block(hs.listen_error("198.19.3.1", 60003, "the port is in use"), 7, 1_800_000_000.0)[0]], [])
    assert error is not None
    hostvars = {
        "h1": {
            "_ascend_diag": _job(
                [{"rank_id": 3, "device_id": 3, "state": "failed", "rc": 1, "tail": [error["message"]]}],
                ports_in_use={"60003": "pid 9 (nc)"},
                job_ports={"60003": "HCCL's host ports (HCCL_IF_BASE_PORT=60000)"},
            ),
        }
    }
    names = {"job": "_ascend_diag", "npu": "_ascend_diag_npu", "clock": "_ascend_diag_clock", "firewall": "_ascend_diag_firewall"}
    out = dg.from_hostvars(["h1"], hostvars, names, 20)
    assert (
        "h1: TCP port 60003 (HCCL's host ports (HCCL_IF_BASE_PORT=60000)) is listened on by pid 9 (nc) - stop it, or move the job's ports"
        in (out["evidence"])
    )


def _address_error(ip: str) -> dict:
    # the stand-in binds the table's device IP: an IP this host does not have fails with EADDRNOTAVAIL's text
    error = hs.listen_error(ip, 16666, "Cannot assign requested address (is %s this host's device IP?)" % ip)
    log, plog = _standin(error)
    found = rank_error.first_error(log, plog)
    assert found is not None
    return found


def test_an_ei0019_that_cannot_assign_the_address_is_a_wrong_device_ip_with_the_live_one() -> None:
    error = _address_error("198.19.3.9")
    assert (error["code"], error["variant"], error["listen"]) == ("EI0019", "address", {"ip": "198.19.3.9", "port": 16666})
    out = dg.diagnose([_finding(3, "h1", 3, error)], _live())
    wrong = (
        "the rank table gives rank 3 (h1 device 3) device IP 198.19.3.9, but the device has 198.19.3.1 (hccn_tool -i 3 -ip -g) - "
        "rebuild the table from the devices (the rank_table playbook; train.yml rebuilds it)"
    )
    row = out["rows"][0]
    assert row["meaning"] == rank_error.ADDRESS["meaning"] and row["variant"] == "address"
    assert row["likely_causes"][0] == wrong and "in use" not in out["line"]
    assert out["line"].endswith(": " + wrong), out["line"]


def test_an_address_error_on_the_devices_own_ip_or_without_a_live_read_says_so() -> None:
    out = dg.diagnose([_finding(3, "h1", 3, _address_error("198.19.3.1"))], _live())
    assert out["rows"][0]["likely_causes"][0].startswith("h1 device 3 has 198.19.3.1, the table's IP, yet HCCL cannot listen on it")
    out = dg.diagnose([_finding(3, "h1", 3, _address_error("198.19.3.9"))], _live(devices={}))
    assert out["rows"][0]["likely_causes"][0] == (
        "h1 device 3: its IP could not be read live (hccn_tool -i 3 -ip -g) - compare it with the table's 198.19.3.9"
    )


def test_a_port_in_use_stays_a_port_in_use_and_gets_its_own_row_beside_a_wrong_ip() -> None:
    busy = rank_error.first_error(*_standin(hs.listen_error("198.19.4.1", 16666, "the port is in use")))
    assert busy is not None and busy["variant"] is None
    out = dg.diagnose([_finding(3, "h1", 3, _address_error("198.19.3.9")), _finding(4, "h1", 4, busy)], _live())
    assert [(r["code"], r["variant"], r["meaning"]) for r in out["rows"]] == [
        ("EI0019", "address", rank_error.ADDRESS["meaning"]),
        ("EI0019", None, rank_error.CODES["EI0019"]["meaning"]),
    ]


# --------------------------------------------------------------------------- the corpus of real logs

CORPUS_KEYS = ("code", "time", "inferred", "summary", "listen", "local_ip", "peers")


@pytest.mark.parametrize("entry, raw", corpus.samples("logs"))
def test_every_real_log_gives_its_first_error(entry: dict, raw: str) -> None:
    lines = raw.splitlines()
    found = rank_error.first_error([], lines) if entry["kind"] == "plog" else rank_error.first_error(lines, [])
    assert found is not None
    assert {key: found[key] for key in CORPUS_KEYS} == entry["expect"]
