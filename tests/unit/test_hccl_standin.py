"""The HCCL stand-in (examples/train/hccl_standin.py): its rank table checks, error texts, ring schedule, and real ranks on loopback.

The script runs on the servers with their python3 and the standard library only, so it is loaded
here from its file. The process tests run 1-4 ranks on 127.x.y.z addresses of this machine's
loopback (no namespaces, no root), each test on its own addresses and a free port.
"""

from __future__ import annotations

import fcntl
import importlib.util
import json
import os
import queue
import re
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from ansible_collections.ascend.cluster.plugins.module_utils._npu import chip as _chip
from tests.helpers.collection import REPO_ROOT
from tests.helpers.procs import finish
from tests.unit.plugins.module_utils.hccn_fakes import INFO_TABLE_910B
from tests.unit.plugins.module_utils.test_npu_smi import INFO_TABLE_A3
from tests.unit.plugins.module_utils.test_npu_smi_a3_and_unread import INFO_TABLE_A3_WIDE

SCRIPT = REPO_ROOT / "examples" / "train" / "hccl_standin.py"
_spec = importlib.util.spec_from_file_location("hccl_standin", SCRIPT)
assert _spec is not None and _spec.loader is not None
hs = importlib.util.module_from_spec(_spec)
sys.modules["hccl_standin"] = hs  # NamedTuple needs its module importable
_spec.loader.exec_module(hs)

# Reference section 7's examples, as patterns.
CANN_TIME = r"\d{4}-\d\d-\d\d-\d\d:\d\d:\d\d\.\d{3}\.\d{3}"
PLOG_LINE = re.compile(r"^\[(ERROR|WARNING|INFO|DEBUG|EVENT)\] HCCL\(\d+,[^)]+\):" + CANN_TIME + r" \[[^\]]+:[^\]]+\]")


def table(servers, version="1.0", **extra):
    """A rank table: ``servers`` is ``[(server_id, [(device_id, device_ip), ...])]``, ranks in server order."""
    rank = 0
    server_list = []
    for server_id, devices in servers:
        entries = []
        for device, ip in devices:
            entry = {"device_id": str(device), "device_ip": ip, "rank_id": str(rank)}
            if version == "1.2":
                entry["super_device_id"] = str(rank)
            entries.append(entry)
            rank += 1
        server_list.append({"server_id": server_id, "host_nic_ip": "reserve", "device": entries})
    out = {"version": version, "server_count": str(len(server_list)), "status": "completed", "server_list": server_list}
    out.update(extra)
    return out


TWO_BY_TWO = [("10.0.0.1", [(0, "198.19.0.1"), (1, "198.19.1.1")]), ("10.0.0.2", [(0, "198.19.0.2"), (1, "198.19.1.2")])]


# --------------------------------------------------------------------------- texts


def test_plog_and_block_lines_have_the_reference_format():
    when = time.mktime((2025, 7, 23, 3, 49, 57, 0, 0, -1)) + 0.177194
    assert hs.cann_time(when) == "2025-07-23-03:49:57.177.194"
    line = hs.plog_line("ERROR", 2717288, "python3", when, "hccl_socket_manager.cc:778", " [2734049][Wait][LinkEstablish]x")
    assert line == "[ERROR] HCCL(2717288,python3):2025-07-23-03:49:57.177.194 [hccl_socket_manager.cc:778] [2734049][Wait][LinkEstablish]x"


def test_plog_path_is_where_cann_writes_it():
    assert re.fullmatch(r"/home/u/ascend/log/debug/plog/plog-42_\d{17}\.log", hs.plog_path({"HOME": "/home/u"}, 42, time.time()))
    moved = hs.plog_path({"HOME": "/home/u", "ASCEND_PROCESS_LOG_PATH": "/logs"}, 42, time.time())
    assert moved.startswith("/logs/debug/plog/plog-42_")


def test_ei0006_names_every_link_that_did_not_come_up():
    ranks = hs.parse_rank_table(json.dumps(table(TWO_BY_TWO)), "t.json", "910B")
    links = [
        hs.Link(hs.Ring(3, "plane 0 ring", (0, 2)), ranks[0], ranks[2], True),
        hs.Link(hs.Ring(3, "plane 0 ring", (0, 2)), ranks[0], ranks[2], False),
    ]
    error = hs.socket_timeout_error(ranks[0], links, 120)
    block = hs.error_block(error, 1292363, time.time())
    assert re.fullmatch(r"EI0006: \[PID: 1292363\] " + CANN_TIME + " " + re.escape(hs.EI0006_REASON), block[0])
    assert block[1].startswith("        Solution: 1. ") and "connect timeout interval (120s by default)" in block[1]
    assert block[2] == "LINK_ERROR_INFO:"
    assert block[4].split() == ["0", "198.19.0.1", "16666", "2", "198.19.0.2", "16666", "client"]
    assert block[5].split()[-1] == "server"
    assert block[-1] == (
        "hccl_standin: EI0006 socket timeout: rank 0 (device 0, 198.19.0.1) got no link to rank 2 198.19.0.2:16666 within "
        "HCCL_CONNECT_TIMEOUT=120s - check that link, its firewall and that every rank started in time"
    )
    # rank[N] is the waiting rank (0), as HCCL prints it; the peer is in the plog's LINK_ERROR_INFO, destination first
    assert next(text for _src, text in error.log_lines).endswith(
        "[Wait][LinkEstablish]wait socket establish timeout, role[1] rank[0] timeout[120]"
    )
    rows = [text for _src, text in error.log_lines if "(2)" in text]
    assert rows and rows[0].split("|")[1:3] == ["  198.19.0.2(2)   ", "  16666  "] and "198.19.0.1(0)" in rows[0]


def test_an_error_without_a_known_code_prints_no_block():
    assert hs.error_block(hs.usage_error("RANK_TABLE_FILE is not set"), 1, time.time()) == ["hccl_standin: RANK_TABLE_FILE is not set"]


# --------------------------------------------------------------------------- rank table


def test_a_good_table_gives_the_ranks_in_order():
    ranks = hs.parse_rank_table(json.dumps(table(TWO_BY_TWO)), "t.json", "910B")
    assert [(r.rank_id, r.server_id, r.device_id, r.device_ip, r.device_port) for r in ranks] == [
        (0, "10.0.0.1", 0, "198.19.0.1", 16666),
        (1, "10.0.0.1", 1, "198.19.1.1", 16666),
        (2, "10.0.0.2", 0, "198.19.0.2", 16666),
        (3, "10.0.0.2", 1, "198.19.1.2", 16666),
    ]
    assert len(hs.parse_rank_table(json.dumps(table(TWO_BY_TWO, version="1.2")), "t.json", "A3")) == 4


def test_a_single_server_table_may_leave_device_ip_out():
    ranks = hs.parse_rank_table(json.dumps(table([("10.0.0.1", [(0, ""), (1, "")])])), "t.json", None)
    assert [hs.local_address(r)[3:] for r in ranks] == [("127.0.0.1", 16666), ("127.0.0.1", 16667)]


def _bad(servers=None, version="1.0", edit=None):
    out = table(TWO_BY_TWO if servers is None else servers, version)
    if edit:
        edit(out)
    return json.dumps(out)


BAD_TABLES = {
    "unreadable device ip": (
        _bad([("10.0.0.1", [(0, "198.19.0.1")]), ("10.0.0.2", [(0, "-.-.-.-")])]),
        "910B",
        "device_ip is invalid in ranktable",
    ),
    "empty device ip, two servers": (
        _bad([("10.0.0.1", [(0, "198.19.0.1")]), ("10.0.0.2", [(0, "")])]),
        "910B",
        "device_ip is invalid in ranktable",
    ),
    "1.0 table on A3": (_bad(), "A3", "rank table version 1.0 does not match chip A3, which reads version 1.2"),
    "1.2 table on 910B": (_bad(version="1.2"), "910B", "does not match chip 910B, which reads version 1.0"),
    "rank ids not from 0": (
        _bad(edit=lambda t: t["server_list"][0]["device"][0].update(rank_id="4")),
        "910B",
        "The 'rank_id' in the ranktable must start from 0 or it is used repeatedly",
    ),
    "rank id used twice": (
        _bad(edit=lambda t: t["server_list"][1]["device"][0].update(rank_id="0")),
        "910B",
        "The 'rank_id' in the ranktable must start from 0 or it is used repeatedly",
    ),
    "server_count": (_bad(edit=lambda t: t.update(server_count="3")), "910B", "server_count 3 does not match the 2 entries"),
    "server_id twice": (
        _bad(edit=lambda t: t["server_list"][1].update(server_id="10.0.0.1")),
        "910B",
        "server_id is missing or used twice",
    ),
    "device 8 on 910A": (_bad([("10.0.0.1", [(8, "198.19.0.1")])]), "910A", "device_id 8 is out of range 0-7 for chip 910A"),
    "empty super_device_id": (
        _bad(version="1.2", edit=lambda t: t["server_list"][0]["device"][0].update(super_device_id="")),
        "A3",
        "super_device_id is empty",
    ),
    "still initializing": (_bad(edit=lambda t: t.update(status="initializing")), "910B", "status is 'initializing'"),
    "not json": ("{", "910B", "not valid JSON"),
    "template 2": (json.dumps({"status": "completed", "group_list": []}), "910B", "template 2"),
}


@pytest.mark.parametrize("case", sorted(BAD_TABLES))
def test_a_bad_table_is_refused_with_ei0014_naming_the_problem(case):
    text, chip, wanted = BAD_TABLES[case]
    with pytest.raises(hs.HcclError) as caught:
        hs.parse_rank_table(text, "/etc/ascend/rank_table.json", chip)
    assert caught.value.code == "EI0014"
    assert wanted in caught.value.reason and "Config_Error_Ranktable" in caught.value.reason
    assert wanted in caught.value.cause and "/etc/ascend/rank_table.json" in caught.value.cause


# --------------------------------------------------------------------------- environment


def test_connect_timeout_keeps_hccls_range_unless_the_stand_in_variable_relaxes_it():
    assert hs.connect_timeout({}) == 120
    assert hs.connect_timeout({"HCCL_CONNECT_TIMEOUT": "7200"}) == 7200
    with pytest.raises(hs.HcclError, match=r"HCCL_CONNECT_TIMEOUT=15 is outside 120-7200 seconds \(HCCL_STANDIN_ALLOW_SHORT_TIMEOUT=1"):
        hs.connect_timeout({"HCCL_CONNECT_TIMEOUT": "15"})
    assert hs.connect_timeout({"HCCL_CONNECT_TIMEOUT": "15", "HCCL_STANDIN_ALLOW_SHORT_TIMEOUT": "1"}) == 15
    with pytest.raises(hs.HcclError, match="outside"):
        hs.connect_timeout({"HCCL_CONNECT_TIMEOUT": "7201", "HCCL_STANDIN_ALLOW_SHORT_TIMEOUT": "1"})
    with pytest.raises(hs.HcclError, match="not a number"):
        hs.connect_timeout({"HCCL_CONNECT_TIMEOUT": "2m"})


def test_launch_env_reads_what_hccl_reads():
    assert hs.launch_env({"RANK_TABLE_FILE": "/t.json", "RANK_ID": "3", "DEVICE_ID": "5"}) == ("/t.json", 3, 5)
    assert hs.launch_env({"MINDSPORE_HCCL_CONFIG_PATH": "/t.json", "RANK_ID": "0", "ASCEND_DEVICE_ID": "2"}) == ("/t.json", 0, 2)
    with pytest.raises(hs.HcclError, match="RANK_TABLE_FILE is not set"):
        hs.launch_env({"RANK_ID": "0", "DEVICE_ID": "0"})
    with pytest.raises(hs.HcclError, match="RANK_ID is 'x'"):
        hs.launch_env({"RANK_TABLE_FILE": "/t.json", "RANK_ID": "x", "DEVICE_ID": "0"})
    with pytest.raises(hs.HcclError, match="DEVICE_ID is not set"):
        hs.launch_env({"RANK_TABLE_FILE": "/t.json", "RANK_ID": "0"})


@pytest.mark.parametrize(
    ("name", "chip"),
    [
        ("910B3", "910B"),
        ("Ascend910B4", "910B"),
        ("910B2C", "910B"),
        ("910B4-1", "910B"),
        ("910_9391", "A3"),
        ("910ProB", "910A"),
        ("910B", "910A"),  # npu-smi's bare 910B: the first-generation variant (tests/corpus/npu_smi)
        ("Ascend 910A", "910A"),
        ("Ascend910", None),  # the generic A3 name without its Phy-ID column
        ("310P3", None),
    ],
)
def test_chip_from_the_npu_smi_name(name, chip):
    assert hs.chip_from_name(name) == chip
    # the collection reads the same npu-smi names alike (module_utils/_npu/chip.py owns the rule)
    assert _chip.npu_smi_chip(name) == chip


def test_an_a3_board_reads_as_a3_and_its_1_2_table_is_accepted():
    """A3 prints the generic ``Ascend910`` (alone: 910A), with two chips per NPU and a Phy-ID header (issue 26 item 1)."""
    assert hs.chip_from_info(INFO_TABLE_A3) == "A3"
    assert hs.chip_from_info(INFO_TABLE_A3_WIDE) == "A3"
    chip = hs.chip_from_info(INFO_TABLE_A3)
    assert len(hs.parse_rank_table(json.dumps(table(TWO_BY_TWO, version="1.2")), "t.json", chip)) == 4
    # one chip per NPU and the same generic name: which chip it is is unclear, so the version check is skipped
    assert hs.chip_from_info(INFO_TABLE_910B.replace("910B3", "Ascend910")) is None
    assert hs.chip_from_info(INFO_TABLE_910B) == "910B"
    assert hs.chip_from_info("npu-smi: no device\n") is None


def test_the_chip_table_is_a_copy_of_the_collections():
    """The stand-in runs alone on a server, so it keeps a copy of module_utils/_npu/chip.py's profiles: the two agree."""
    assert hs.CHIPS == {name: (profile.rank_table_version, profile.max_device_id) for name, profile in _chip.CHIPS.items()}
    assert hs.ANY_CHIP_MAX_DEVICE_ID == _chip.ANY_CHIP_MAX_DEVICE_ID


def test_a_chip_the_collection_does_not_know_is_refused():
    with pytest.raises(SystemExit):
        hs.parse_args(["--chip", "A5"])
    assert hs.parse_args(["--chip", "A3"]).chip == "A3"


# --------------------------------------------------------------------------- rings


def _ranks(shape):
    """Ranks of servers with ``shape[i]`` devices each, numbered in server order."""
    ranks, rank = [], 0
    for s, count in enumerate(shape):
        for d in range(count):
            ranks.append(hs.Rank(rank, f"10.0.0.{s + 1}", d, f"198.19.{d}.{s + 1}", 16666))
            rank += 1
    return ranks


def test_the_plan_rings_inside_servers_and_across_them_by_device_plane():
    plan = hs.plan_rings(_ranks([2, 2, 2]))
    assert [(kind, ring.name, ring.members) for kind, ring in plan] == [
        ("rs", "server ring", (0, 1)),
        ("rs", "server ring", (2, 3)),
        ("rs", "server ring", (4, 5)),
        ("ar", "plane 0 ring", (0, 2, 4)),
        ("ar", "plane 1 ring", (1, 3, 5)),
        ("ag", "server ring", (0, 1)),
        ("ag", "server ring", (2, 3)),
        ("ag", "server ring", (4, 5)),
    ]
    ranks = _ranks([2, 2, 2])
    for kind, ring in plan:  # a cross-server link joins devices of one index: one subnet of a per-device plan
        if kind == "ar":
            assert len({ranks[r].device_id for r in ring.members}) == 1
    assert [ring.members for ring in hs.my_rings(plan, 3)] == [(2, 3), (1, 3, 5)]
    assert [(k, r.members) for k, r in hs.plan_rings(_ranks([2, 1]))] == [("rs", (0, 1, 2)), ("ag", (0, 1, 2))]
    assert [(k, r.members) for k, r in hs.plan_rings(_ranks([1, 1]))] == [("ar", (0, 1))]
    assert [(k, r.members) for k, r in hs.plan_rings(_ranks([3]))] == [("rs", (0, 1, 2)), ("ag", (0, 1, 2))]


def test_the_ring_steps_leave_each_position_owning_the_next_chunk():
    assert hs.reduce_scatter_steps(0, 4) == [(0, 3), (3, 2), (2, 1)]
    assert hs.all_gather_steps(0, 4) == [(1, 0), (0, 3), (3, 2)]
    assert hs.chunks(10, 20, 3) == [(10, 13), (13, 16), (16, 20)]


@pytest.mark.parametrize("shape", [[1, 1], [3], [2, 2], [3, 2], [2, 1, 2], [4, 4]])
def test_the_allreduce_gives_every_rank_the_xor_of_all(shape):
    """Every rank runs the real allreduce() in a thread; queues stand in for the sockets."""
    ranks = _ranks(shape)
    plan = hs.plan_rings(ranks)
    size = 1001  # not a multiple of any ring length
    wires: dict = {}
    lock = threading.Lock()

    def wire(ring, sender):
        with lock:
            return wires.setdefault((ring.number, sender), queue.Queue())

    results: dict = {}

    def rank_main(rank_id):
        def exchange(ring, data, nbytes):
            pos = ring.members.index(rank_id)
            wire(ring, rank_id).put(data)
            got = wire(ring, ring.members[pos - 1]).get(timeout=10)
            assert len(got) == nbytes
            return got

        buf = bytearray(hs.rank_data(rank_id, size))
        hs.allreduce(plan, rank_id, buf, exchange)
        results[rank_id] = bytes(buf)

    threads = [threading.Thread(target=rank_main, args=(r.rank_id,)) for r in ranks]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(20)
    expected = hs.expected_result(len(ranks), size)
    assert expected != hs.rank_data(0, size)
    assert results == {r.rank_id: expected for r in ranks}


# --------------------------------------------------------------------------- real ranks on loopback


def _free_port(ip: str) -> int:
    with socket.socket() as probe:
        probe.bind((ip, 0))
        return probe.getsockname()[1]


@pytest.fixture
def loopback(tmp_path):
    """Addresses 127.<a>.<b>.1.. of this test only, a free port, and a writer of the rank table."""
    return loopback_in(tmp_path)


def loopback_in(tmp_path: Path) -> tuple:
    """What the ``loopback`` fixture gives (the checkpoint tests' module makes its own from it)."""
    base = f"127.{100 + os.getpid() % 100}.{int(time.time() * 1000) % 250}"
    port = _free_port(base + ".1")

    def write(servers, **extra):
        doc = table(servers, **extra)
        for server in doc["server_list"]:
            for device in server["device"]:
                device["device_port"] = str(port)
        path = tmp_path / "rank_table.json"
        path.write_text(json.dumps(doc))
        return path

    return base, port, write


def start_rank(
    tmp_path: Path, table_path: Path, rank: int, device: int, size_mb: str = "1", args: tuple = (), **env: str
) -> subprocess.Popen:
    rank_env = dict(os.environ, RANK_TABLE_FILE=str(table_path), RANK_ID=str(rank), DEVICE_ID=str(device))
    for name in hs.RESTART_COUNT_VARS:
        rank_env.pop(name, None)
    rank_env.update(HOME=str(tmp_path / f"home{rank}"), HCCL_STANDIN_LOCK_DIR=str(tmp_path / f"locks{rank}"))
    rank_env.update(env)
    os.makedirs(rank_env["HCCL_STANDIN_LOCK_DIR"], exist_ok=True)
    argv = [sys.executable, str(SCRIPT), "--chip", "910B", "--size-mb", size_mb, *args]
    return subprocess.Popen(argv, env=rank_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def plogs(tmp_path: Path, rank: int) -> list:
    return sorted((tmp_path / f"home{rank}" / "ascend" / "log" / "debug" / "plog").glob("plog-*_*.log"))


def test_four_ranks_on_two_servers_all_reduce_and_report_each_link(loopback, tmp_path):
    base, port, write = loopback
    path = write([("10.0.0.1", [(0, base + ".1"), (1, base + ".2")]), ("10.0.0.2", [(0, base + ".3"), (1, base + ".4")])])
    results = finish([start_rank(tmp_path, path, r, r % 2, HCCL_CONNECT_TIMEOUT="120") for r in range(4)])
    digests = set()
    for rank, (rc, stdout, stderr) in enumerate(results):
        assert rc == 0, (rank, stdout, stderr)
        result = json.loads(next(line for line in stdout.splitlines() if line.startswith("HCCL_STANDIN_RESULT "))[20:])
        digests.add(result["sha256"])
        assert [(link["ring"], link["to_rank"]) for link in result["links"]] == [
            ("server ring", rank ^ 1),
            (f"plane {rank % 2} ring", (rank + 2) % 4),
        ]
        assert all(link["bytes"] > 0 and link["mb_per_s"] > 0 for link in result["links"])
        assert re.search(
            rf"^hccl_standin: link rank {rank} {re.escape(base)}\.\d -> rank \d {re.escape(base)}\.\d:{port} \(server ring\): ",
            stdout,
            re.M,
        )
        assert "result verified" in stdout
        assert not plogs(tmp_path, rank)
    assert len(digests) == 1


def test_an_unreadable_device_ip_fails_every_rank_with_the_table_error_in_stderr_and_plog(loopback, tmp_path):
    base, _port, write = loopback
    path = write([("10.0.0.1", [(0, base + ".1")]), ("10.0.0.2", [(0, "-.-.-.-")])])
    moved = tmp_path / "logs"
    [(rc, _stdout, stderr)] = finish([start_rank(tmp_path, path, 0, 0, ASCEND_PROCESS_LOG_PATH=str(moved))])
    assert rc == 1
    assert re.search(r"^EI0014: \[PID: \d+\] " + CANN_TIME + " device_ip is invalid in ranktable", stderr, re.M), stderr
    [plog] = sorted((moved / "debug" / "plog").glob("plog-*.log"))
    lines = plog.read_text().splitlines()
    assert all(PLOG_LINE.match(line) for line in lines) and "device_ip is invalid in ranktable" in lines[0]
    assert f"hccl_standin: plog {plog}" in stderr
    assert (
        stderr.rstrip().splitlines()[-1].startswith(f"hccl_standin: rank table {path} refused (EI0014): device_ip is invalid in ranktable")
    )
    assert oct(plog.stat().st_mode & 0o777) == "0o640"


def test_a_rank_whose_peer_never_comes_fails_with_ei0006_after_the_connect_timeout(loopback, tmp_path):
    base, port, write = loopback
    path = write([("10.0.0.1", [(0, base + ".1")]), ("10.0.0.2", [(0, base + ".2")])])
    started = time.monotonic()
    [(rc, _stdout, stderr)] = finish([start_rank(tmp_path, path, 0, 0, HCCL_CONNECT_TIMEOUT="2", HCCL_STANDIN_ALLOW_SHORT_TIMEOUT="1")])
    took = time.monotonic() - started
    assert rc == 1 and 2 <= took < 20, (took, stderr)
    assert re.search(r"^EI0006: \[PID: \d+\] " + CANN_TIME + r" Getting socket times out\. ", stderr, re.M), stderr
    info = stderr.split("LINK_ERROR_INFO:\n", 1)[1].splitlines()
    assert info[1].split() == ["0", base + ".1", str(port), "1", base + ".2", str(port), "client"]
    assert info[2].split() == ["0", base + ".1", str(port), "1", base + ".2", str(port), "server"]
    assert (
        stderr.rstrip()
        .splitlines()[-1]
        .startswith(f"hccl_standin: EI0006 socket timeout: rank 0 (device 0, {base}.1) got no link to rank 1 {base}.2:{port}")
    )
    [plog] = plogs(tmp_path, 0)
    assert (
        "[hccl_socket_manager.cc:778] " in plog.read_text()
        and "wait socket establish timeout, role[1] rank[0] timeout[2]" in plog.read_text()
    )


def test_an_occupied_device_port_or_device_fails_before_any_link(loopback, tmp_path):
    base, port, write = loopback
    path = write([("10.0.0.1", [(0, base + ".1"), (1, base + ".2")])])
    with socket.socket() as squatter:
        squatter.bind((base + ".1", port))
        squatter.listen(1)
        [(rc, _out, stderr)] = finish([start_rank(tmp_path, path, 0, 0)])
    assert rc == 1
    assert re.search(
        rf"^EI0019: \[PID: \d+\] {CANN_TIME} listen on ip\[{re.escape(base)}\.1\] and specific port\[{port}\] fail: the port is in use",
        stderr,
        re.M,
    )
    lock_dir = tmp_path / "locks1"
    lock_dir.mkdir()
    with open(lock_dir / "hccl-standin-device1.lock", "w") as held:
        held.write("4242")
        held.flush()
        fcntl.flock(held, fcntl.LOCK_EX)
        [(rc, _out, stderr)] = finish([start_rank(tmp_path, path, 1, 1)])
    assert rc == 1
    assert re.search(
        rf"^EJ0001: \[PID: \d+\] {CANN_TIME} Device 1 is held by process 4242\. Maybe the last training process is running$", stderr, re.M
    )


def test_a_rank_on_the_wrong_device_is_refused(loopback, tmp_path):
    _base, _port, write = loopback
    path = write([("10.0.0.1", [(0, "127.0.0.1")])])
    [(rc, _out, stderr)] = finish([start_rank(tmp_path, path, 0, 3)])
    assert rc == 1 and "rank 0 is device 0 in the table, but this process runs on DEVICE_ID 3" in stderr


def test_a_peer_lost_mid_all_reduce_is_reported_only_after_hccl_exec_timeout(loopback, tmp_path):
    """Rank 1 moves half the bytes, finds a wrong result and exits; rank 0 waits out HCCL_EXEC_TIMEOUT, as on hardware."""
    base, port, write = loopback
    path = write([("10.0.0.1", [(0, base + ".1")]), ("10.0.0.2", [(0, base + ".2")])])
    started = time.monotonic()
    survivor, quitter = finish([start_rank(tmp_path, path, 0, 0, HCCL_EXEC_TIMEOUT="3"), start_rank(tmp_path, path, 1, 0, size_mb="0.5")])
    assert quitter[0] == 1 and quitter[2].rstrip().endswith("hccl_standin: rank 1: the all-reduce result is wrong"), quitter
    assert survivor[0] == 1 and time.monotonic() - started >= 3, survivor
    assert survivor[2].rstrip().splitlines()[-1] == (
        f"hccl_standin: EI0006 socket timeout: rank 0 (device 0, {base}.1) lost its link to rank 1 {base}.2:{port} during the "
        "all-reduce: the peer closed the link (then no data within HCCL_EXEC_TIMEOUT=3s)"
    )


def test_the_device_lock_holds_the_device_and_names_an_unusable_lock_dir(tmp_path):
    held = hs.take_device(2, {"HCCL_STANDIN_LOCK_DIR": str(tmp_path)})
    with pytest.raises(hs.HcclError) as caught:
        hs.take_device(2, {"HCCL_STANDIN_LOCK_DIR": str(tmp_path)})
    assert caught.value.code == "EJ0001" and f"held by process {os.getpid()}" in caught.value.reason
    held.close()
    hs.take_device(2, {"HCCL_STANDIN_LOCK_DIR": str(tmp_path)}).close()  # free again once the holder is gone
    with pytest.raises(hs.HcclError, match=r"cannot open the device lock /nonexistent/hccl-standin-device1\.lock .*HCCL_STANDIN_LOCK_DIR"):
        hs.take_device(1, {"HCCL_STANDIN_LOCK_DIR": "/nonexistent"})


def test_ascend_slog_print_to_stdout_prints_the_plog_lines_instead_of_writing_them(tmp_path, capsys):
    error = hs.table_error(hs.DEVICE_IP_TEXT, "t.json")
    assert hs.write_plog(error, {"ASCEND_SLOG_PRINT_TO_STDOUT": "1", "HOME": str(tmp_path)}, 7, "python3", time.time()) == ""
    printed = capsys.readouterr().out.splitlines()
    assert len(printed) == 2 and all(PLOG_LINE.match(line) for line in printed) and "device_ip is invalid in ranktable" in printed[0]
    assert not (tmp_path / "ascend").exists()
