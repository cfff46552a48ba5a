"""npu-smi: ``info -l`` as in the reference, the ``info`` box table and its process section."""

from __future__ import annotations

import os
import subprocess
import time

import pytest

# Lines taken from real npu-smi 24.1 / 25.3 output on A2 and A3 servers (see docs/simulator.md).
RULE_TOP = "+------------------------------------------------------------------------------------------------+"
RULE_COLS = "+---------------------------+---------------+----------------------------------------------------+"
RULE_DOUBLE = "+===========================+===============+====================================================+"
HEAD1 = "| NPU   Name                | Health        | Power(W)    Temp(C)           Hugepages-Usage(page)|"
HEAD2 = "| Chip                      | Bus-Id        | AICore(%)   Memory-Usage(MB)  HBM-Usage(MB)        |"
HEAD2_A3 = "| Chip  Phy-ID              | Bus-Id        | AICore(%)   Memory-Usage(MB)  HBM-Usage(MB)        |"
PROC_HEAD = "| NPU     Chip              | Process id    | Process name             | Process memory(MB)      |"


NO_PROCS_0 = "| No running processes found in NPU 0                                                            |"


def no_procs(npu):
    return NO_PROCS_0.replace("NPU 0 ", "NPU %d " % npu) if npu < 10 else NO_PROCS_0.replace("NPU 0  ", "NPU %d " % npu)


def test_info_l_matches_reference(host):
    proc = host.npu_smi("info", "-l")
    expected = "Total Count                    : 8\n\n" + "".join(
        "NPU ID                         : %d\nChip Count                     : 1\n\n" % i for i in range(8)
    )
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, expected, "")


def test_info_l_sparse_ids(make_host):
    h = make_host("sparse", extra=("--device-ids", "1,4"))
    assert h.npu_smi("info", "-l").stdout == (
        "Total Count                    : 2\n\n"
        "NPU ID                         : 1\nChip Count                     : 1\n\n"
        "NPU ID                         : 4\nChip Count                     : 1\n\n"
    )


def test_info_l_a3_counts_dies(make_host):
    h = make_host("a3", chip="A3")
    out = h.npu_smi("info", "-l").stdout
    assert out.startswith(
        "Total Count                    : 8\n\nNPU ID                         : 0\nChip Count                     : 2\n\n"
    )


def test_info_table_layout_910b(host):
    proc = host.npu_smi("info")
    assert proc.returncode == 0 and proc.stderr == ""
    lines = proc.stdout.splitlines()
    assert proc.stdout.endswith("\n")
    assert all(len(line) == 98 for line in lines), [line for line in lines if len(line) != 98]
    assert lines[0] == RULE_TOP
    assert lines[1] == "| npu-smi 24.1.0                   Version: 24.1.0                                               |"
    assert lines[2:6] == [RULE_COLS, HEAD1, HEAD2, RULE_DOUBLE]
    assert lines[6].startswith("| 0     910B3               | OK            | ")
    assert lines[7].startswith("| 0                         | 0000:C1:00.0  | 0           0    / 0          ")
    assert lines[8] == RULE_DOUBLE
    start = lines.index(PROC_HEAD)
    assert lines[start - 1] == RULE_COLS and lines[start + 1] == RULE_DOUBLE
    assert lines[start + 2 :] == [x for npu in range(8) for x in (no_procs(npu), RULE_DOUBLE)]


def test_info_table_910a_and_a3_names(make_host):
    a = make_host("a", chip="910A").npu_smi("info").stdout.splitlines()
    assert a[6].startswith("| 0     910A                | OK            |")
    assert a[7].endswith("0           2280 / 15039      0    / 32768         |")
    a3 = make_host("a3", chip="A3").npu_smi("info").stdout.splitlines()
    assert a3[4] == HEAD2_A3
    assert a3[6].startswith("| 0     Ascend910           | OK            | ")
    assert a3[7].startswith("| 0     0                   | 0000:9D:00.0  |")
    assert a3[8] == RULE_TOP
    assert a3[9].startswith("| 0     Ascend910           | OK            | -           ")
    assert a3[10].startswith("| 1     1                   | 0000:9F:00.0  |")
    assert a3[11] == RULE_DOUBLE


@pytest.fixture
def sleeper():
    procs = []

    def start(env, argv=("sleep", "60")):
        proc = subprocess.Popen(list(argv), env=dict(os.environ, **env))
        procs.append(proc)
        return proc

    yield start
    for proc in procs:
        proc.kill()
        proc.wait()


def wait_listed(h, pid, present=True):
    for _attempt in range(50):
        out = h.npu_smi("info").stdout
        if (("| %-14s|" % pid) in out) == present:
            return out
        time.sleep(0.1)
    raise AssertionError("pid %s %s in:\n%s" % (pid, "not listed" if present else "still listed", out))


def test_process_holding_a_device_is_listed(host, sleeper):
    proc = sleeper(dict(host.env, DEVICE_ID="3"))
    out = wait_listed(host, proc.pid)
    row = "| 3       0                 | %-14s| %-25s| " % (proc.pid, "sleep")
    rows = [line for line in out.splitlines() if line.startswith(row)]
    assert len(rows) == 1 and len(rows[0]) == 98
    assert no_procs(3) not in out and no_procs(2) in out


def test_ascend_device_id_wins_over_device_id(host, sleeper):
    proc = sleeper(dict(host.env, ASCEND_DEVICE_ID="5", DEVICE_ID="1"))
    out = wait_listed(host, proc.pid)
    assert "| 5       0                 | %-14s|" % proc.pid in out
    assert no_procs(1) in out


def test_a3_process_row_names_npu_and_chip(make_host, sleeper):
    h = make_host("a3", chip="A3")
    proc = sleeper(dict(h.env, ASCEND_DEVICE_ID="5"))
    out = wait_listed(h, proc.pid)
    assert "| 2       1                 | %-14s|" % proc.pid in out


def test_shells_and_other_hosts_are_not_listed(make_host, sleeper):
    a, b = make_host("a"), make_host("b")
    shell = sleeper(dict(a.env, DEVICE_ID="0"), argv=("sh", "-c", "sleep 60; true"))
    other = sleeper(dict(b.env, DEVICE_ID="0"))
    mine = sleeper(dict(a.env, DEVICE_ID="0"))
    out = wait_listed(a, mine.pid)
    assert "| %-14s|" % shell.pid not in out
    assert "| %-14s|" % other.pid not in out
    wait_listed(b, other.pid)
    mine.kill()
    mine.wait()
    wait_listed(a, mine.pid, present=False)


def test_unsupported_command(host):
    proc = host.npu_smi("set", "-t", "reset")
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr.startswith("ascend-sim: the simulated npu-smi supports")
