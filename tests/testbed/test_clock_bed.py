"""A server whose wall clock is off (libfaketime, ``bed.py clock``): the launch measures, corrects, warns or refuses.

h1 keeps the real time; h3 runs behind it. Each rank records ``started`` in its own server's clock, and beside it the
offset the pre-flight measured (``clock_offset``): the skew is computed from times corrected by it, and the recorded
offset is checked against the shift the bed gave the host.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
from pathlib import Path

import pytest

from ansible_collections.ascend.cluster.plugins.module_utils._job.control import controller_time
from tests.helpers.ansible_cli import run_adhoc, run_playbook
from tests.helpers.procs import pids_with_argv
from tests.testbed.harness import run_root
from tests.testbed.test_launch_bed import STAND_IN, TRAIN, bed_vars, states

SHIFTED = "h3"
STATUS = TRAIN.with_name("status.yml")


@pytest.fixture(scope="module")
def clock_bed(bed):
    """The session bed with device IPs on h1 and h3; h3's clock is reset to real time afterwards."""
    bed.set_device_ips(["h1", SHIFTED])
    try:
        with run_root("clock-bed") as root:
            yield bed, root
    finally:
        bed.clock(SHIFTED, 0)


def launch(clock_bed, job_id, **extra):
    bed, _root = clock_bed
    extra.setdefault("ascend_train_env", {"STEPS": "1"})
    return run_playbook(TRAIN, bed.inventory, extra_vars=bed_vars(clock_bed, job_id, ascend_hosts=f"h1,{SHIFTED}", **extra))


def offset_row(output: str, host: str) -> float:
    """The offset the pre-flight's clock table shows for ``host``."""
    found = re.search(rf'"{host}\s+(-?\d+\.\d+)\s+\d+\.\d+\s+\d+\.\d+\s+(ok|warn|refuse)"', output)
    assert found, output
    return float(found.group(1))


def corrected_skew(clock_bed, job_id: str, shift: int) -> float:
    """Spread of the 16 ranks' start times in the controller's clock: each less the clock offset its state.json
    recorded, which for h3's ranks (8..15) is the bed's ``shift`` and for h1's 0, each within the reading's bound."""
    ranks = states(clock_bed, job_id)
    assert sorted(ranks) == list(range(16)) and all(s["rc"] == 0 for s in ranks.values()), ranks
    assert all(abs(s["clock_offset"] - (shift if rank >= 8 else 0)) < 1.0 for rank, s in ranks.items()), ranks
    starts = [t for t in (controller_time(s, "started") for s in ranks.values()) if t is not None]
    assert len(starts) == 16, ranks
    return max(starts) - min(starts)


def status_start_times(clock_bed, job_id: str) -> list:
    """The START_TIME column status.yml prints for every rank of the job, as seconds of the day."""
    bed, _root = clock_bed
    extra = {
        k: v
        for k, v in bed_vars(clock_bed, job_id, ascend_hosts=f"h1,{SHIFTED}").items()
        if k.startswith("ascend_") and k != "ascend_job_id"
    }
    res = run_playbook(STATUS, bed.inventory, extra_vars=dict(extra, job_id=job_id, ascend_report_all_rows=True))
    assert res.rc == 0, str(res)
    times = re.findall(rf'"h[13]\s+{job_id}\s+\d+\s+\d+\s+done\s+0\s+\d+\s+(\d\d):(\d\d):(\d\d\.\d{{3}})\s', res.stdout)
    assert len(times) == 16, res.stdout
    return [int(h) * 3600 + int(m) * 60 + float(s) for h, m, s in times]


PY_TIME = "import time; print(repr(time.time()))"


def remote_time(bed, host: str, *, over_ssh: bool) -> float:
    """``host``'s Python ``time.time()`` minus ours, read over SSH (as Ansible does) or with ``bed.py exec``."""
    before = time.time()
    if over_ssh:
        ssh = ["ssh", "-F", str(Path(bed.inventory).with_name("ssh_config")), host, f"/usr/bin/python3 -c '{PY_TIME}'"]
        out = subprocess.run(ssh, capture_output=True, text=True, check=True, timeout=60).stdout
    else:
        out = bed.exec(host, "/usr/bin/python3", "-c", PY_TIME).stdout
    return float(out) - (before + time.time()) / 2


def test_bed_clock_shifts_python_time_over_ssh_and_exec_and_the_module_measures_it(clock_bed):
    bed, _root = clock_bed
    bed.clock(SHIFTED, -30)
    for over_ssh in (True, False):
        assert abs(remote_time(bed, SHIFTED, over_ssh=over_ssh) + 30) < 2.0
        assert abs(remote_time(bed, "h1", over_ssh=over_ssh)) < 2.0
    # Ansible still reaches the shifted host, and the measured offset is within its own bound
    measured = run_adhoc(f"h1,{SHIFTED}", "ascend.cluster.clock_offset", inventory=bed.inventory)
    for host, shift in (("h1", 0), (SHIFTED, -30)):
        got = measured[host]
        assert got["_status"] == "SUCCESS" and abs(got["offset"] - shift) <= got["uncertainty"] + 0.001, measured
    assert measured[SHIFTED]["status"] == "warn" and measured["h1"]["status"] == "ok"
    bed.clock(SHIFTED, 0)
    assert abs(remote_time(bed, SHIFTED, over_ssh=True)) < 2.0


def test_thirty_seconds_behind_warns_and_ranks_still_start_together(clock_bed):
    bed, root = clock_bed
    bed.clock(SHIFTED, -30)
    # HCCL_CONNECT_TIMEOUT 240 s: refused only above 60 s, so 30 s behind is a warning
    res = launch(clock_bed, "behind30", ascend_hccl_connect_timeout=240)
    assert res.rc == 0, str(res)
    assert abs(offset_row(res.stdout, SHIFTED) + 30) < 1.0 and abs(offset_row(res.stdout, "h1")) < 1.0, res.stdout
    output = " ".join((res.stdout + res.stderr).split())
    assert re.search(r"the clock of h3 is (29|30)\.\d+ s behind the controller \(\+/- \d\.\d+ s\), more than 1 s", output), str(res)
    assert "chrony" in output
    assert "the clock of h1" not in output
    # without the gate's correction h3's ranks would start 30 s late (the figure: bench/bench_launch.py)
    assert corrected_skew(clock_bed, "behind30", -30) <= 0.5
    # what the job reports reads h3's times in the controller's clock too (issue 25 item 3): the summary's first start
    # to last end is the job's length, not 30 s more, and status.yml's start times of the 16 ranks are one moment
    summary = json.loads((root / "controller" / "behind30" / "summary.json").read_text())
    assert summary["duration_s"] < 10, summary
    starts = [r["started"] for r in summary["ranks"]]
    assert max(starts) - min(starts) <= 0.5, summary["ranks"]
    shown = status_start_times(clock_bed, "behind30")
    assert max(shown) - min(shown) <= 0.5, shown


def test_far_behind_is_refused_before_anything_starts_unless_allowed(clock_bed):
    bed, root = clock_bed
    bed.clock(SHIFTED, -90)
    refused = launch(clock_bed, "behind90", ascend_train_env={"STEPS": "600", "STEP_S": "0.1"})
    assert refused.rc != 0
    output = " ".join(refused.stdout.split())
    assert re.search(r"launch refused, nothing was started: the clock of h3 is (89|90)\.\d+ s behind", output), str(refused)
    assert "a quarter of HCCL_CONNECT_TIMEOUT" in output and "ascend_launch_allow_clock_skew=true" in output
    assert offset_row(refused.stdout, SHIFTED) < -89
    # nothing started: no run directory, no job record, no rank process
    assert not (root / "runs" / "behind90").exists()
    for host in ("h1", SHIFTED):
        assert bed.exec(host, "test", "-e", "/run/ascend-cluster/jobs/behind90", check=False).returncode == 1
    assert pids_with_argv("bash", str(STAND_IN), environ="/runs/behind90/") == []  # this job's (others run beside it)

    # allowed: the same cluster launches (so no lock was left held either), and still in step
    allowed = launch(clock_bed, "allowed90", ascend_launch_allow_clock_skew=True)
    assert allowed.rc == 0, str(allowed)
    assert "launching anyway as ascend_launch_allow_clock_skew is set" in " ".join((allowed.stdout + allowed.stderr).split())
    assert corrected_skew(clock_bed, "allowed90", -90) <= 0.5
