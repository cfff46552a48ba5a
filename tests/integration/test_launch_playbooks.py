"""ascend.cluster.train / status / stop on the simulated 2 x 8 cluster (both servers are local connections).

The stand-in training command is examples/train/train_1p.sh (prints a falling loss, can be told to
crash one rank); every check reads what the ranks themselves wrote (state.json, train.log).
"""

from __future__ import annotations

import json
import os
import pwd
import re
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from ansible_collections.ascend.cluster.plugins.module_utils._job_procs import group_alive
from tests.helpers.ansible_cli import DEPRECATION_MARK, run_playbook, start_playbook
from tests.helpers.collection import REPO_ROOT
from tests.helpers.procs import alive, wait_for
from tests.helpers.runs import rank_states as read_rank_states
from tests.helpers.runs import read_env_log, snapshot

from .conftest import SIM_INVENTORY

TRAIN = REPO_ROOT / "playbooks" / "train.yml"
STATUS = REPO_ROOT / "playbooks" / "status.yml"
STOP = REPO_ROOT / "playbooks" / "stop.yml"
STAND_IN = REPO_ROOT / "examples" / "train" / "train_1p.sh"
# The collection's compact stdout callback (plugins/callback/compact.py), and the default one showing only changes and failures.
COMPACT = {"ANSIBLE_STDOUT_CALLBACK": "ascend.cluster.compact"}
QUIET = {"ANSIBLE_DISPLAY_OK_HOSTS": "false", "ANSIBLE_DISPLAY_SKIPPED_HOSTS": "false"}
# The stand-in's run that lasts until it is stopped.
LONG_RUN = {"STEPS": "100000", "STEP_S": "0.5"}


def launch_vars(cluster, **extra):
    """Extra vars: the sim inventory pointed at this cluster, with per-server job/lock dirs."""
    base = dict(cluster.inventory_vars)
    base.update(
        {
            "ascend_launch_run_root": f"{cluster.root}/runs",
            "ascend_launch_job_root": "{{ ascend_sim_server }}/jobs",
            "ascend_launch_lock_dir": "{{ ascend_sim_server }}/locks",
            "ascend_launch_controller_dir": f"{cluster.root}/controller",
            "ascend_launch_extra_env": {"ASCEND_SIM_STATE": "{{ ascend_sim_server }}/state"},
            "ascend_launch_progress_interval_s": 1,
            "train_command": f"bash {STAND_IN} --data_path=/data",
        }
    )
    base.update(extra)
    return base


# a row of the pre-flight's clock table: server, offset, +/-, round trip, verdict
CLOCK_ROW = re.compile(r'^\s*"(server\d)\s+(-?\d+\.\d+)\s+(\d+\.\d+)\s+(\d+\.\d+)\s+(ok|warn|refuse)",?$', re.M)


def assert_clock_offsets_near_zero(res):
    """The pre-flight showed each server's clock offset, ~0 within its bound: both servers are this machine."""
    assert "SERVER   CLOCK_OFFSET_S  +/-_S" in res.stdout, res
    rows = {m.group(1): (float(m.group(2)), float(m.group(3)), float(m.group(4))) for m in CLOCK_ROW.finditer(res.stdout)}
    assert sorted(rows) == ["server0", "server1"], res.stdout
    for server, (offset, uncertainty, rtt) in rows.items():
        # one machine, one clock: the offset is within the measurement's own bound (plus rounding)
        assert abs(offset) <= uncertainty + 0.001, (server, rows)
        assert abs(uncertainty - rtt / 2) <= 0.0001, (server, rows)
    assert all(m.group(5) == "ok" for m in CLOCK_ROW.finditer(res.stdout)), res.stdout
    assert "the clock of" not in res.stdout + res.stderr  # no warning


def rank_states(cluster, job_id=None):
    """Every rank's state.json of the (only / given) job, by rank id."""
    runs = cluster.root / "runs"
    jobs = [job_id] if job_id else sorted(p.name for p in runs.iterdir())
    return read_rank_states(runs / jobs[-1])


def refused_train(cluster, **extra) -> str:
    """train.yml (``np=16`` unless ``extra`` says otherwise), which the pre-flight must refuse before anything starts
    (no run directory): its output."""
    res = run_playbook(TRAIN, SIM_INVENTORY, extra_vars=launch_vars(cluster, **{"np": 16, **extra}))
    assert res.rc != 0, res
    assert not (cluster.root / "runs").exists(), res  # nothing started
    return res.stdout


def running(cluster, job_id: str | None, count: int) -> bool:
    """``count`` ranks of the (only / given) job running."""
    runs = cluster.root / "runs" / (job_id or "")
    return runs.exists() and sum(s.get("phase") == "running" for s in rank_states(cluster, job_id).values()) == count


class Played:
    """ansible-playbook train.yml in its own process group, its output appended to a file."""

    def __init__(self, tmp_path: Path, extra: dict) -> None:
        self.output = tmp_path / f"train-{time.monotonic_ns()}.out"
        # append mode: the workers write to the same file (reopened through /proc) without overwriting
        with open(self.output, "a") as out:
            self.proc = start_playbook(TRAIN, SIM_INVENTORY, extra, out)

    def ctrl_c(self) -> None:
        os.killpg(self.proc.pid, signal.SIGINT)

    def text(self) -> str:
        return self.output.read_text()

    def failed(self) -> str:
        """The output of the play, which must have failed."""
        text = self.text()
        assert self.proc.returncode != 0, text
        return text

    def finish(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()


def test_np16_runs_every_rank_together_and_reports(sim_cluster):
    cluster = sim_cluster()
    res = run_playbook(TRAIN, SIM_INVENTORY, extra_vars=launch_vars(cluster, np=16, ascend_train_env={"STEPS": "3"}), env=COMPACT)
    assert res.rc == 0, res
    states = rank_states(cluster)
    assert sorted(states) == list(range(16))
    assert all(s["phase"] == "exited" and s["rc"] == 0 for s in states.values()), states
    starts = [s["started"] for s in states.values()]
    # The gate makes every rank start at one instant (bench/bench_launch.py measures the spread,
    # launch_skew_s); here only the design property, with room for a loaded machine: far inside
    # HCCL_CONNECT_TIMEOUT, unlike ranks started one by one.
    assert max(starts) - min(starts) < 10.0, f"launch skew {max(starts) - min(starts):.3f}s"
    # every rank in its own directory with env.log; server1's ranks are 8..15 on devices 0..7
    job = next((cluster.root / "runs").iterdir())
    env11 = read_env_log(job / "device_11" / "env.log")
    assert (env11["RANK_ID"], env11["DEVICE_ID"], env11["RANK_SIZE"], env11["DEVICE_NUM"]) == ("11", "3", "16", "8")
    assert env11["RANK_TABLE_FILE"] == str(job / "rank_table.json")  # the job's own copy, which nothing else writes
    assert env11["HCCL_CONNECT_TIMEOUT"] == "120"
    assert "step 3 loss 333" in (job / "device_11" / "train.log").read_text()
    # logs fetched to the controller, per-rank table printed
    fetched = sorted((cluster.root / "controller" / job.name / "logs").glob("*/device_*.log"))
    assert len(fetched) == 16
    assert "SERVER     DEVICE_ID  RANK_ID  STATE" in res.stdout
    assert "ranks: " in res.stdout  # progress lines
    # the summary: one line, a short table, the JSON document for CI (docs/summaries.md)
    summary_file = cluster.root / "controller" / job.name / "summary.json"
    assert oct(summary_file.stat().st_mode & 0o777) == "0o644"
    summary = json.loads(summary_file.read_text())
    assert (summary["ok"], summary["job_id"], summary["counts"], summary["failure"]) == (True, job.name, {"done": 16}, None)
    assert summary["line"] == f"train {job.name}: 16/16 ranks done in {summary['duration_s']:g} s", summary["line"]
    assert summary["line"] in res.stdout
    assert [r["rank_id"] for r in summary["ranks"]] == list(range(16))
    assert {r["outcome"] for r in summary["ranks"]} == {"exit 0"}
    assert all(r["duration_s"] == round(r["duration_s"], 1) for r in summary["ranks"])
    assert "... 12 more row(s) with STATE done/running; -e ascend_report_all_rows=true lists them" in res.stdout
    # the compact callback: plays, changes, tables and the summary last, not 290 lines of per-host results
    lines = res.stdout.splitlines()
    assert len(lines) < 80, res
    assert lines[-3:-1] == ["SUMMARY", f"  {summary['line']}"], res
    # the two servers only: the first play's checks run once, on the first of its hosts, none on localhost
    assert lines[-1].startswith("RECAP 2 host(s): ") and "failed" not in lines[-1], res
    assert not any(line.startswith(("skipping:", "ok: [", "TASK [")) for line in lines), res


def assert_layout(job, nranks, layout):
    """The job's ranks per server (from their env.log) are ``layout``, each server's on devices 0..n-1 with DEVICE_NUM n."""
    per_server: dict[str, Any] = {}
    for rank in range(nranks):
        env = read_env_log(job / f"device_{rank}" / "env.log")
        per_server.setdefault(env["ASCEND_SIM_STATE"], []).append((env["DEVICE_NUM"], env["DEVICE_ID"]))
    assert sorted(len(v) for v in per_server.values()) == layout
    for ranks in per_server.values():
        assert {num for num, dummy in ranks} == {str(len(ranks))}
        assert sorted(int(device) for dummy, device in ranks) == list(range(len(ranks)))
    return per_server


# spread=false (whole servers first) is asserted in the SIGKILL test below, which launches np=8 with it
@pytest.mark.parametrize(
    "selection, layout",
    [
        ({}, [4, 4]),  # train.yml spreads np over the play's servers by default
        # the seed launcher's --env syntax; and HCCL's host NIC chosen by name (ascend_launch_nic)
        ({"npu_env": "127.0.1.1:4,127.0.1.2:4", "ascend_launch_nic": "lo"}, [4, 4]),
    ],
    ids=["spread by default", "npu_env and a NIC"],
)
def test_eight_ranks_per_server_layout(sim_cluster, selection, layout):
    cluster = sim_cluster()
    res = run_playbook(TRAIN, SIM_INVENTORY, extra_vars=launch_vars(cluster, np=8, ascend_train_env={"STEPS": "1"}, **selection), env=QUIET)
    assert res.rc == 0, res
    # only changes and failures are shown, and still the table and the summary line
    assert "ok: [" not in res.stdout and "skipping: [" not in res.stdout, res
    assert "SERVER     DEVICE_ID  RANK_ID  STATE" in res.stdout, res
    # printed by ascend.cluster.show itself, as plain lines, once
    assert res.stdout.count(f"\ntrain {next((cluster.root / 'runs').iterdir()).name}: 8/8 ranks done in ") == 1, res
    job = next((cluster.root / "runs").iterdir())
    assert_layout(job, 8, layout)
    # HCCL_SOCKET_IFNAME only where the inventory named the NIC
    assert read_env_log(job / "device_0" / "env.log").get("HCCL_SOCKET_IFNAME") == selection.get("ascend_launch_nic"), selection


def test_an_hccl_if_ip_that_is_not_the_servers_is_refused_before_start(sim_cluster):
    cluster = sim_cluster()
    extra = launch_vars(cluster, np=2, framework="pytorch", ascend_launch_host_ip="198.18.255.254")
    res = run_playbook(TRAIN, SIM_INVENTORY, extra_vars=extra)
    assert res.rc != 0, res
    assert "HCCL's host NIC, nothing was started: HCCL_IF_IP 198.18.255.254 (the rank table's server_id, or " in res.stdout, res
    assert not (cluster.root / "runs").exists() or not any((cluster.root / "runs").iterdir())
    assert not (cluster.root / "controller").exists()  # refused by the pre-flight: no job directory on the controller


def test_a_launch_that_fails_at_the_stage_releases_every_rank_and_leaves_no_job_directory(sim_cluster):
    """Issue 25 item 2: rank 0's server cannot listen for the job's group (an address it does not have): its stage call
    fails, server1's staged ranks are released, nothing starts - and the controller keeps no directory for the job."""
    cluster = sim_cluster()
    extra = launch_vars(cluster, np=16, ascend_job_id="nogroup", ascend_launch_group_address="192.0.2.1")
    res = run_playbook(TRAIN, SIM_INVENTORY, extra_vars=extra)
    assert res.rc != 0, res
    assert "cannot listen on 192.0.2.1 port" in res.stdout, res
    states = rank_states(cluster, "nogroup")
    assert states and all(s["phase"] != "running" and not alive(s["runner_pid"]) for s in states.values()), states
    assert not (cluster.root / "controller").exists(), sorted((cluster.root / "controller").rglob("*"))


def test_one_failing_rank_stops_every_rank_and_is_named(sim_cluster):
    cluster = sim_cluster()
    env = {"FAIL_RANK": "11", "FAIL_STEP": "3", "STEPS": "400", "STEP_S": "0.1"}
    res = run_playbook(TRAIN, SIM_INVENTORY, extra_vars=launch_vars(cluster, np=16, ascend_train_env=env), env=QUIET)
    assert res.rc != 0, res
    assert "rank 11 (server 127.0.1.2, device 3) failed first: exit code 1" in res.stdout, res
    assert "rank 11 crashing at step 3" in res.stdout
    # the failure once (no result dump per server), the summary line and summary.json
    assert res.stdout.count("failed first: exit code 1") == 1, res
    assert '"first_failure"' not in res.stdout and '"ranks"' not in res.stdout, res
    job = next((cluster.root / "runs").iterdir()).name
    assert f"FAILED: train {job}: rank 11 (server 127.0.1.2, device 3) exit 1; 15 stopped" in res.stdout, res
    summary = json.loads((cluster.root / "controller" / job / "summary.json").read_text())
    assert summary["ok"] is False and summary["failure"]["rank_id"] == 11 and summary["failure"]["outcome"] == "exit 1"
    assert summary["counts"] == {"failed": 1, "stopped": 15}, summary["counts"]
    assert {r["outcome"] for r in summary["ranks"] if r["rank_id"] != 11} <= {
        "stopped by fail-fast (SIGTERM)",
        "stopped by fail-fast (SIGKILL)",
    }
    states = rank_states(cluster)
    assert states[11]["rc"] == 1
    others = [s for r, s in states.items() if r != 11]
    assert all(s["rc"] in (-15, -9) for s in others), {r: s["rc"] for r, s in states.items()}
    assert not any(alive(s["pid"]) for s in states.values())
    # The others would have run 40 s on their own; they were stopped long before. How fast is the
    # benchmark figure failfast_s (bench/bench_launch.py), not a timed assertion here.
    failfast = max(s["ended"] for s in others) - states[11]["ended"]
    assert failfast < 30.0, f"fail-fast took {failfast:.2f}s"


def test_without_fail_fast_one_failing_rank_leaves_every_other_running_to_its_end(sim_cluster):
    """-e fail_fast=false: rank 11 fails at its second step; the 15 others, on both servers, finish their 20 steps, nobody
    is stopped, and the play fails saying so."""
    cluster = sim_cluster()
    env = {"FAIL_RANK": "11", "FAIL_STEP": "2", "STEPS": "20", "STEP_S": "0.1"}
    res = run_playbook(TRAIN, SIM_INVENTORY, extra_vars=launch_vars(cluster, np=16, fail_fast=False, ascend_train_env=env), env=QUIET)
    assert res.rc != 0, res
    job = next((cluster.root / "runs").iterdir()).name
    others = "fail-fast off, the other ranks ran to their end: 15 done"
    assert f"rank 11 (server 127.0.1.2, device 3) failed first: exit code 1; {others}." in res.stdout, res
    assert f"FAILED: train {job}: rank 11 (server 127.0.1.2, device 3) exit 1; {others}" in res.stdout, res
    assert "stopped" not in res.stdout.split("PLAY RECAP")[0].lower().replace("ascend.cluster.stop", ""), res
    summary = json.loads((cluster.root / "controller" / job / "summary.json").read_text())
    assert summary["fail_fast"] is False and summary["counts"] == {"done": 15, "failed": 1}, summary
    assert {r["outcome"] for r in summary["ranks"] if r["rank_id"] != 11} == {"exit 0"}
    states = rank_states(cluster)
    assert states[11]["rc"] == 1 and all(s["rc"] == 0 and s["stopped_by"] is None for r, s in states.items() if r != 11), states
    assert min(s["ended"] for r, s in states.items() if r != 11) - states[11]["ended"] > 1.0  # they ran on, 1.8 s more
    assert not any((cluster.root / server / "jobs" / job / "abort").exists() for server in ("server0", "server1"))
    assert json.loads((cluster.root / "server0" / "jobs" / job / "job.json").read_text())["fail_fast"] is False


def test_a_rank_killed_by_sigkill_fails_a_one_server_job_naming_the_signal(sim_cluster):
    cluster = sim_cluster()
    # rank 3 kills itself with SIGKILL, as the OOM killer would: nobody of ours sent it
    env = {"FAIL_RANK": "3", "FAIL_STEP": "3", "FAIL_SIGNAL": "KILL", "STEPS": "400", "STEP_S": "0.1"}
    res = run_playbook(TRAIN, SIM_INVENTORY, extra_vars=launch_vars(cluster, np=8, spread=False, ascend_train_env=env), env=COMPACT)
    assert res.rc != 0, res
    # the compact callback: the failure's message once, the failing task's line, the summary and the failed host last
    assert res.stdout.count("failed first: killed by SIGKILL") == 1, res
    job = next((cluster.root / "runs").iterdir()).name
    line = f"FAILED: train {job}: rank 3 (server 127.0.1.1, device 3) killed by SIGKILL; 7 stopped"
    assert res.stdout.splitlines()[-3:] == ["SUMMARY", f"  {line}", res.stdout.splitlines()[-1]], res
    assert res.stdout.splitlines()[-1].startswith("RECAP ") and "failed: server0" in res.stdout.splitlines()[-1], res
    assert f"FAILED [server0] ascend.cluster.launch_training : Fail with the job's summary line: {line}" in res.stdout, res
    assert json.loads((cluster.root / "controller" / job / "summary.json").read_text())["failure"]["outcome"] == "killed by SIGKILL"
    assert (
        "rank 3 (server 127.0.1.1, device 3) failed first: killed by SIGKILL (signal 9) - not sent by ascend.cluster; the OOM killer?"
    ) in res.stdout, res
    assert "rank 3 crashing at step 3 by SIGKILL" in res.stdout, res  # its log tail
    states = rank_states(cluster)
    assert sorted(states) == list(range(8))
    # spread=false packs: all 8 ranks on server0's devices 0-7 (DEVICE_NUM 8), none on server1
    per_server = assert_layout(cluster.root / "runs" / job, 8, [8])
    assert list(per_server) == [f"{cluster.root}/server0/state"], per_server
    assert read_env_log(cluster.root / "runs" / job / "device_0" / "env.log").get("HCCL_SOCKET_IFNAME") is None
    assert (states[3]["rc"], states[3]["stopped_by"]) == (-9, None)
    others = {r: s for r, s in states.items() if r != 3}
    assert all(s["rc"] in (-15, -9) and "rank 3 failed (rc=-9)" in s["stopped_by"] for s in others.values()), states
    assert not any(alive(s["pid"]) for s in states.values())


def test_stop_of_a_watched_job_fails_the_watching_play_naming_the_stop(sim_cluster, tmp_path):
    cluster = sim_cluster()
    played = Played(tmp_path, launch_vars(cluster, np=16, ascend_train_env=LONG_RUN))
    try:
        wait_for(lambda: running(cluster, None, 16), 240, "16 ranks running")
        # USER unset (cron, a container, systemd): the stop names the controller's effective user, not "an unknown user"
        stop = run_playbook(STOP, SIM_INVENTORY, extra_vars=launch_vars(cluster), env={"USER": ""})
        assert stop.rc == 0, stop
        played.proc.wait(timeout=120)
    finally:
        played.finish()
    output = played.failed()
    assert DEPRECATION_MARK not in output, output  # what run_playbook's guard checks
    assert (
        f"the job was stopped before its ranks finished: stopped by ascend.cluster.stop, run by {pwd.getpwuid(os.geteuid()).pw_name} at "
        in output
    ), output
    states = rank_states(cluster)
    assert all(s["rc"] in (-15, -9) and "stopped by ascend.cluster.stop, run by" in s["stopped_by"] for s in states.values()), states
    assert not any(alive(s["pid"]) for s in states.values())


def test_a_coordinator_killed_under_a_watched_train_is_named_and_status_says_so(sim_cluster, tmp_path):
    """Issue 34: the job's coordinator (a daemon on server0, rank 0's server) killed -9 while the play watches. The
    members stop their ranks when they lose it (3 s); the watch printed "ranks: running 16" for minutes. Now it names the
    coordinator within about lost_after + 1 s, the play ends with every rank's real state (asked of each server, the
    coordinator's too: it is not lost), blames no server, and status.yml names the coordinator's end."""
    cluster = sim_cluster()
    played = Played(tmp_path, launch_vars(cluster, np=16, ascend_train_env=LONG_RUN))
    try:
        wait_for(lambda: running(cluster, None, 16), 240, "16 ranks running")
        job = next((cluster.root / "runs").iterdir()).name
        view = json.loads((cluster.root / "server0" / "jobs" / job / "group.json").read_text())
        os.kill(view["pid"], signal.SIGKILL)
        killed = time.time()
        played.proc.wait(timeout=120)
    finally:
        played.finish()
    output = played.failed()
    found = re.search(r"the job's coordinator on server0 \(127\.0\.1\.1:\d+\) (was lost|went silent) at [\d:]+: ", output)
    assert found, output
    # when the watch decided: the controller's copy of the view, written with why it ended
    kept = cluster.root / "controller" / job / "group.json"
    assert json.loads(kept.read_text())["coordinator_gone"]["how"] in ("lost", "silent")
    named = kept.stat().st_mtime - killed
    assert 0 < named < 3.0 + 3.0, named  # lost_after (3 s) + 1 s on a quiet machine; slack for a loaded one
    summary = json.loads((cluster.root / "controller" / job / "summary.json").read_text())
    assert summary["counts"] == {"stopped": 16} and summary["failure"]["rank_id"] == -1, summary
    assert summary["line"].startswith(f"FAILED: train {job}: the job's coordinator on server0 "), summary["line"]
    states = rank_states(cluster)
    assert all(s["stopped_by"].startswith("lost the job's coordinator at 127.0.1.1:") for s in states.values()), states
    assert not any(alive(s["pid"]) for s in states.values())
    status = run_playbook(STATUS, SIM_INVENTORY, extra_vars=launch_vars(cluster))
    assert status.rc == 0, status
    assert f"status {job}: 16 stopped; the job's coordinator at 127.0.1.1:" in status.stdout, status.stdout
    assert "has not rewritten its group.json since " in status.stdout and f"its process {view['pid']} is gone)" in status.stdout


@pytest.mark.parametrize("training_too", [True, False], ids=["runners and training killed", "only the runners killed"])
def test_a_server_whose_runners_are_killed_fails_the_job_naming_its_lost_ranks(sim_cluster, tmp_path, training_too):
    """Issue 12 item 2: server1's runners die by SIGKILL (a host going down takes them without a word).

    None of them records an exit. The watch must fail naming server1's ranks as lost, stop server0's
    ranks, and - when the training outlived its runner - kill that orphaned training too.
    """
    cluster = sim_cluster()
    played = Played(tmp_path, launch_vars(cluster, np=16, ascend_train_env=LONG_RUN))
    try:
        wait_for(lambda: running(cluster, None, 16), 240, "16 ranks running")
        ranks = rank_states(cluster)
        if training_too:
            # as a host going down does, all at once: the runners frozen first (a training killed under a live runner
            # would be recorded as an exit), then the trainings, then the runners - so that no probe of the watch
            # falls between a runner's death and its training's (that one would find a training left unsupervised)
            for rank in range(8, 16):
                os.kill(ranks[rank]["runner_pid"], signal.SIGSTOP)
            for rank in range(8, 16):
                os.killpg(ranks[rank]["pid"], signal.SIGKILL)
        for rank in range(8, 16):
            os.kill(ranks[rank]["runner_pid"], signal.SIGKILL)
        played.proc.wait(timeout=120)
    finally:
        played.finish()
    output = played.failed()
    lost = "the rank's processes vanished without recording an exit code" if training_too else "its runner died without recording an exit"
    assert f"127.0.1.2: ranks 8-15 lost - {lost}" in output, output
    states = rank_states(cluster)
    assert all(states[r]["phase"] == "running" for r in range(8, 16)), states  # nobody recorded their end
    assert all(
        states[r]["rc"] in (-15, -9) and states[r]["stopped_by"].startswith("stopped by the job's group: ranks 8, 9,") for r in range(8)
    ), states
    assert not any(alive(p) for s in ranks.values() for p in (s["pid"], s["runner_pid"]))
    assert not any(group_alive(s["pid"]) for s in ranks.values())  # the orphaned trainings were killed too


def test_wait_false_status_leftover_kill_stale_and_stop(sim_cluster):
    cluster = sim_cluster()
    first = run_playbook(TRAIN, SIM_INVENTORY, extra_vars=launch_vars(cluster, np=16, wait=False, ascend_train_env=LONG_RUN))
    assert first.rc == 0, first
    assert "not waiting" in first.stdout
    wait_for(lambda: all(s.get("phase") == "running" for s in rank_states(cluster).values()), 30, "ranks running")
    first_pids = [s["pid"] for s in rank_states(cluster).values()]

    status = run_playbook(STATUS, SIM_INVENTORY, extra_vars=launch_vars(cluster))
    assert status.rc == 0, status
    first_job = next((cluster.root / "runs").iterdir()).name
    assert f"status {first_job}: 16 running" in status.stdout, status  # the table lists the first four

    # a second launch on the same devices is refused before anything starts, and nothing is written: the job's own
    # table is written after the pre-flight (np=8 packed would write another, one-server table)
    # the running job's coordinator rewrites its group.json every heartbeat round (its liveness): that file apart
    alive_view = f"server0/jobs/{first_job}/group.json"
    running = {k: v for k, v in snapshot(cluster, skip=("runs", "controller")).items() if k != alive_view}
    jobs = sorted(p.name for p in (cluster.root / "runs").iterdir())
    second = run_playbook(TRAIN, SIM_INVENTORY, extra_vars=launch_vars(cluster, np=8, spread=False, ascend_job_id="second"))
    assert second.rc != 0
    assert "devices in use, nothing was started" in second.stdout, second
    assert not (cluster.root / "runs" / "second").exists()
    assert {k: v for k, v in snapshot(cluster, skip=("runs", "controller")).items() if k != alive_view} == running
    # the running job's own table, which it reads, is the 16-rank one; the launches wrote no shared table
    assert json.loads((cluster.root / "runs" / first_job / "rank_table.json").read_text())["server_count"] == "2"
    assert not (cluster.root / "server0" / "etc" / "rank_table.json").exists()
    assert sorted(p.name for p in (cluster.root / "runs").iterdir()) == jobs
    assert all(alive(p) for p in first_pids)

    # kill_stale stops the leftovers and launches
    third = run_playbook(
        TRAIN,
        SIM_INVENTORY,
        extra_vars=launch_vars(cluster, np=16, kill_stale=True, wait=False, ascend_job_id="third", ascend_train_env=LONG_RUN),
    )
    assert third.rc == 0, third
    assert not any(alive(p) for p in first_pids)
    wait_for(lambda: all(s.get("phase") == "running" for s in rank_states(cluster, "third").values()), 30, "third running")
    third_pids = [s["pid"] for s in rank_states(cluster, "third").values()]

    stop = run_playbook(STOP, SIM_INVENTORY, extra_vars=launch_vars(cluster))
    assert stop.rc == 0, stop
    assert not any(alive(p) for p in third_pids)
    states = rank_states(cluster, "third")
    assert all(s["phase"] == "exited" for s in states.values()), states
    # the devices are free again: a new launch passes pre-flight without kill_stale
    again = run_playbook(
        TRAIN, SIM_INVENTORY, extra_vars=launch_vars(cluster, np=16, ascend_job_id="again", ascend_train_env={"STEPS": "1"})
    )
    assert again.rc == 0, again
    # its pre-flight showed both servers' clock offsets, ~0 (this was tests/integration/test_launch_clock.py's own run)
    assert_clock_offsets_near_zero(again)
    assert all(s["rc"] == 0 for s in rank_states(cluster, "again").values())


def test_stop_after_the_controller_is_interrupted_leaves_nothing(sim_cluster):
    cluster = sim_cluster()
    extra = launch_vars(cluster, np=16, ascend_train_env=LONG_RUN)
    proc = start_playbook(TRAIN, SIM_INVENTORY, extra, subprocess.DEVNULL)
    try:
        wait_for(lambda: running(cluster, None, 16), 240, "16 ranks running")
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the controller dies without cleaning up
        proc.wait()
    pids = [s["pid"] for s in rank_states(cluster).values()]
    runners = [s["runner_pid"] for s in rank_states(cluster).values()]
    assert all(alive(p) for p in pids)
    # quiet settings (ascend.cluster.show): the one line is still printed, and only once
    stop = run_playbook(STOP, SIM_INVENTORY, extra_vars=launch_vars(cluster), env=QUIET)
    assert stop.rc == 0, stop
    assert stop.stdout.count("stop: job ") == 1 and ": stopped 16 rank(s) on 2 server(s)" in stop.stdout, stop
    assert not any(alive(p) for p in pids + runners)
    locks = [lock for server in ("server0", "server1") for lock in (cluster.root / server / "locks").glob("*.lock")]
    assert len(locks) == 16
    import fcntl

    for lock in locks:
        with open(lock) as handle:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)  # raises if any rank still holds it


def test_foreign_process_on_a_device_blocks_launch_until_kill_stale(sim_cluster):
    cluster = sim_cluster()
    with cluster["server1"].hold(3) as squatter:
        blocked = run_playbook(TRAIN, SIM_INVENTORY, extra_vars=launch_vars(cluster, np=16))
        assert blocked.rc != 0
        assert f"device 3: process {squatter.pid} (sleep) holds NPU 3" in blocked.stdout, blocked
        assert not (cluster.root / "runs").exists()
        cleared = run_playbook(
            TRAIN, SIM_INVENTORY, extra_vars=launch_vars(cluster, np=16, kill_stale=True, ascend_train_env={"STEPS": "1"})
        )
        assert cleared.rc == 0, cleared
        assert squatter.wait(timeout=10) == -signal.SIGTERM


ROLE_ALONE = """\
- name: The launch role on its own, with what a caller gives it
  hosts: ascend
  gather_facts: false
  roles:
    - role: ascend.cluster.launch_training
"""


@pytest.mark.parametrize(
    ("given", "refusal"),
    [
        (
            {},
            "launch_training needs ascend_rank_table, ascend_local_ranks and ascend_rank_size (run the ascend.cluster.rank_table role first) and",
        ),
        (
            {  # rank ids must be 0..N-1: HCCL refuses rank 1 alone
                "ascend_rank_table": {
                    "version": "1.0",
                    "status": "completed",
                    "server_count": "1",
                    "server_list": [{"server_id": "127.0.1.1", "device": [{"device_id": "0", "device_ip": "198.18.1.10", "rank_id": "1"}]}],
                },
                "ascend_local_ranks": [],
                "ascend_rank_size": 1,
            },
            "validate_rank_table: rank_id 1 is outside 0..0: rank ids must run 0..N-1",
        ),
    ],
    ids=["no rank table", "a table HCCL refuses"],
)
def test_the_role_alone_refuses_a_caller_without_ranks_or_with_a_table_hccl_refuses_before_any_server_is_read(
    sim_cluster, tmp_path, given, refusal
):
    cluster = sim_cluster()
    playbook = tmp_path / "launch_alone.yml"
    playbook.write_text(ROLE_ALONE)
    res = run_playbook(playbook, SIM_INVENTORY, extra_vars=launch_vars(cluster, ascend_train_command=f"bash {STAND_IN}", **given))
    assert res.rc != 0 and refusal in res.stdout, res
    assert "Check that no leftover process" not in res.stdout, res  # refused on the controller: no pre-flight ran
    assert not (cluster.root / "runs").exists() and not (cluster.root / "controller").exists()
