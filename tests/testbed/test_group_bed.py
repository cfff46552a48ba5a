"""The job's group over real SSH on an 8-host test bed (h1..h8, 2 NPUs each), with Ansible's default forks=5.

These are the bed's fail-fast and host-death tests (the 2-host launch bed has none of its own: what it would show, these
show with more servers than forks).

More servers than forks, as on every real cluster: a crash on the last server and a server that dies must stop every
rank on every server within seconds, found by the servers themselves (the group's heartbeats), not by the controller.
Every time is read from what the ranks wrote (state.json on the shared /var/tmp run root).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path
from typing import Iterator

import pytest

from tests.helpers.ansible_cli import BIN_DIR, ansible_env, run_playbook
from tests.helpers.collection import REPO_ROOT
from tests.helpers.procs import alive, wait_for
from tests.helpers.runs import rank_states
from tests.testbed.harness import Bed, leftovers, run_root, unique_prefix
from tests.testbed.test_launch_bed import bed_vars as launch_bed_vars

HOSTS = 8
DEVICES = 2
TRAIN = REPO_ROOT / "playbooks" / "train.yml"
STOP = REPO_ROOT / "playbooks" / "stop.yml"
FORKS = {"ANSIBLE_FORKS": "5"}


@pytest.fixture(scope="module")
def bed8() -> Iterator[tuple[Bed, Path]]:
    """An 8-host bed of its own (2 NPUs a host, device IPs 198.19.<device>.<host>), taken down at the end."""
    if os.geteuid() != 0:
        pytest.fail("the test bed needs root (network namespaces, bridges, sshd): run pytest as root")
    prefix = unique_prefix()
    try:
        bed = Bed.up(prefix, HOSTS, "--devices", str(DEVICES))
        bed.set_device_ips(devices=DEVICES)
        with run_root("group-bed") as root:
            yield bed, root
    finally:
        Bed(prefix).down()
    assert not leftovers(prefix), f"bed.py down left {leftovers(prefix)} behind"


def bed_vars(root: Path, job_id: str, **extra: object) -> dict:
    """The launch bed's extra vars (tests/testbed/test_launch_bed.py), on every host of this bed."""
    return launch_bed_vars((None, root), job_id, **dict({"ascend_hosts": "ascend", "np": HOSTS * DEVICES}, **extra))


def test_a_crash_on_the_last_of_eight_servers_stops_every_rank_within_a_second(bed8):
    bed, root = bed8
    crash = {"STEPS": "400", "STEP_S": "0.2", "FAIL_RANK": "15", "FAIL_STEP": "5"}
    res = run_playbook(TRAIN, bed.inventory, extra_vars=bed_vars(root, "crash8", ascend_train_env=crash), env=FORKS)
    assert res.rc != 0, str(res)
    assert f"rank 15 (server {bed.mgmt_ip('h8')}, device 1) failed first: exit code 1; every rank was stopped." in res.stdout, str(res)
    assert f": rank 15 (server {bed.mgmt_ip('h8')}, device 1) exit 1; 15 stopped" in res.stdout, str(res)  # the summary line
    states = rank_states(root / "runs" / "crash8")
    assert sorted(states) == list(range(16)) and states[15]["rc"] == 1
    assert all(s["rc"] in (-15, -9) and "rank 15 failed (rc=1)" in s["stopped_by"] for r, s in states.items() if r != 15), states
    crashed = states[15]["ended"]
    assert max(s["ended"] for s in states.values()) - crashed < 1.0, {r: s["ended"] - crashed for r, s in states.items()}
    assert not any(alive(p) for s in states.values() for p in (s["pid"], s["runner_pid"]))


def test_a_server_that_dies_among_eight_is_found_by_the_others_within_five_seconds(bed8, tmp_path):
    bed, root = bed8
    extra = bed_vars(root, "death8", ascend_train_env={"STEPS": "100000", "STEP_S": "0.5"})
    output = tmp_path / "train.out"
    with open(output, "w") as out:
        controller = subprocess.Popen(
            [str(BIN_DIR / "ansible-playbook"), str(TRAIN), "-i", str(bed.inventory), "-e", json.dumps(extra)],
            cwd=REPO_ROOT,
            env=dict(ansible_env(), **FORKS),
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    died = 0.0
    try:
        runs = root / "runs" / "death8"
        wait_for(lambda: runs.exists() and sum(s.get("phase") == "running" for s in rank_states(runs).values()) == 16, 300, "16 ranks")
        wait_for((root / "controller" / "death8" / "group.json").exists, 120, "the job's watch")
        died = time.time()
        bed.mgmt_down("h5")  # ranks 8-9: to every other server and the controller, h5 has died
        try:
            controller.wait(timeout=180)
        finally:
            bed.mgmt_up("h5")
    finally:
        if controller.poll() is None:
            os.killpg(controller.pid, signal.SIGKILL)
            controller.wait()
        run_playbook(STOP, bed.inventory, env={"ANSIBLE_SSH_ARGS": "-o ControlMaster=no"}, extra_vars=bed_vars(root, "death8"))
    played = output.read_text()
    assert controller.returncode != 0, played
    assert re.search(
        rf"{re.escape(bed.mgmt_ip('h5'))} stopped answering at \d\d:\d\d:\d\d; ranks 8-9 lost; every other rank was stopped", played
    ), played
    view = json.loads((root / "controller" / "death8" / "group.json").read_text())
    assert view["members"]["h5"]["state"] == "lost" and view["members"]["h5"]["lost_at"] - died <= 5.0, view["members"]["h5"]
    states = rank_states(root / "runs" / "death8")
    others = {r: s for r, s in states.items() if r not in (8, 9)}
    assert all(s["phase"] == "exited" and s["ended"] - died <= 6.0 for s in others.values()), others
    cause = f"stopped by the job's group: server {bed.mgmt_ip('h5')} stopped answering"
    assert all(s["rc"] in (-15, -9) and s["stopped_by"].startswith(cause) for s in others.values()), others
    # issue 25 item 5: the final table says what is known of h5's ranks - lost, not "running"
    summary = json.loads((root / "controller" / "death8" / "summary.json").read_text())
    assert [(r["rank_id"], r["state"]) for r in summary["ranks"] if r["rank_id"] in (8, 9)] == [(8, "lost"), (9, "lost")], summary
    # h5, cut off, stopped its own ranks when it lost the coordinator (on h1)
    assert all(states[r]["stopped_by"].startswith(f"lost the job's coordinator at {bed.mgmt_ip('h1')}:") for r in (8, 9)), states
    assert not any(alive(p) for s in states.values() for p in (s["pid"], s["runner_pid"]))
