"""ascend.cluster.train / stop over real SSH on the multi-host test bed (servers h1, h2 of the bed).

Every host gets device IPs 198.19.<device>.<host index>/24 (the plan docs/testbed.md suggests),
the job records live in each host's private /run, the run directories on the shared /var/tmp.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
from pathlib import Path
from typing import Any

from ansible_collections.ascend.cluster.plugins.module_utils._job.procs import group_alive
from tests.helpers.ansible_cli import BIN_DIR, ansible_env, run_playbook, start_playbook
from tests.helpers.collection import REPO_ROOT
from tests.helpers.procs import alive, pids_with_argv, wait_for
from tests.helpers.runs import rank_states, read_env_log
from tests.testbed.bedlib.files import SIM_PYTHON, sim_path
from tests.testbed.harness import run_root

TRAIN = REPO_ROOT / "playbooks" / "train.yml"
STOP = REPO_ROOT / "playbooks" / "stop.yml"
SMOKE = REPO_ROOT / "playbooks" / "smoke.yml"
DIAGNOSE = REPO_ROOT / "playbooks" / "diagnose.yml"
STAND_IN = REPO_ROOT / "examples" / "train" / "train_1p.sh"
TORCH_PYTHON = REPO_ROOT / "build" / "torch-venv" / "bin" / "python"
GLOO = REPO_ROOT / "examples" / "train" / "train_gloo.py"
HCCL_STAND_IN = REPO_ROOT / "examples" / "train" / "hccl_standin.py"


def with_device_ips(bed):
    """``(bed, run root)`` for a module's tests: device IPs 198.19.<device>.<host index> on every host, and a run root on
    the shared /var/tmp (``harness.run_root``), removed after the module."""
    bed.set_device_ips()
    with run_root("launch-bed") as root:
        yield bed, root


def bed_vars(launch_bed, job_id, **extra):
    _bed, root = launch_bed
    base = {
        "ascend_hosts": "h1,h2",
        "np": 16,
        "ascend_job_id": job_id,
        "train_command": f"bash {STAND_IN}",
        "ascend_launch_run_root": f"{root}/runs",
        "ascend_launch_job_root": "/run/ascend-cluster/jobs",
        "ascend_launch_controller_dir": f"{root}/controller",
        "ascend_launch_stage_timeout_s": 300,
    }
    base.update(extra)
    return base


def train_gloo(launch_bed, job_id, **extra):
    """train.yml with examples/train/train_gloo.py (PyTorch gloo, 15 steps, over the bed's mgmt0) as the training."""
    bed, _root = launch_bed
    assert TORCH_PYTHON.exists(), "build/torch-venv is missing: run `make torch-venv`"
    gloo: dict[str, Any] = {"framework": "pytorch", "train_command": f"{TORCH_PYTHON} {GLOO} --steps 15"}
    gloo["ascend_train_env"] = {"GLOO_SOCKET_IFNAME": "mgmt0", "OMP_NUM_THREADS": "1"}
    return run_playbook(TRAIN, bed.inventory, timeout=1500, extra_vars=bed_vars(launch_bed, job_id, **gloo, **extra))


def assert_gloo_trained(rank, log: str) -> None:
    """``log``: a rank's train_gloo.py log of 15 steps, its loss down to under a quarter."""
    losses = [float(x) for x in re.findall(r"^step \d+ loss ([0-9.]+)$", log, re.M)]
    assert len(losses) == 15 and losses[-1] < losses[0] / 4, (rank, losses)


def states(launch_bed, job_id):
    _bed, root = launch_bed
    return rank_states(root / "runs" / job_id)


def test_pytorch_gloo_16_ranks_on_two_servers(launch_bed):
    bed, root = launch_bed
    res = train_gloo(launch_bed, "gloo")
    assert res.rc == 0, str(res)
    ranks = states(launch_bed, "gloo")
    assert sorted(ranks) == list(range(16)) and all(s["rc"] == 0 for s in ranks.values())
    starts = [s["started"] for s in ranks.values()]
    assert max(starts) - min(starts) < 10.0  # design property; the figure is bench/bench_launch.py's
    digests = set()
    for rank in range(16):
        rdir = root / "runs" / "gloo" / f"device_{rank}"
        assert_gloo_trained(rank, (rdir / "train.log").read_text())
        digests.add(json.loads((rdir / "final_weights.json").read_text())["sha256"])
        env = read_env_log(rdir / "env.log")
        assert env["MASTER_ADDR"] == bed.mgmt_ip("h1")
        assert env["HCCL_IF_IP"] == bed.mgmt_ip("h1" if rank < 8 else "h2")
        assert (env["WORLD_SIZE"], env["RANK"], env["LOCAL_RANK"]) == ("16", str(rank), str(rank % 8))
    assert len(digests) == 1


def test_wait_false_then_stop_from_a_new_controller(launch_bed):
    bed, _root = launch_bed
    res = run_playbook(
        TRAIN, bed.inventory, extra_vars=bed_vars(launch_bed, "detached", wait=False, ascend_train_env={"STEPS": "100000", "STEP_S": "0.5"})
    )
    assert res.rc == 0, str(res)
    ranks = states(launch_bed, "detached")
    assert len(ranks) == 16
    stop = run_playbook(STOP, bed.inventory, extra_vars={"ascend_hosts": "h1,h2", "ascend_launch_job_root": "/run/ascend-cluster/jobs"})
    assert stop.rc == 0, str(stop)
    ranks = states(launch_bed, "detached")
    assert all(s["phase"] in ("exited", "aborted") for s in ranks.values()), ranks
    assert not any(alive(s.get("pid") or s["runner_pid"]) for s in ranks.values())


def test_np8_runs_four_ranks_on_each_server(launch_bed):
    bed, root = launch_bed
    res = run_playbook(
        TRAIN, bed.inventory, extra_vars=bed_vars(launch_bed, "np8", np=8, framework="pytorch", ascend_train_env={"STEPS": "1"})
    )
    assert res.rc == 0, str(res)
    ranks = states(launch_bed, "np8")
    assert sorted(ranks) == list(range(8)) and all(s["rc"] == 0 for s in ranks.values())
    placed: dict[str, Any] = {}
    for rank in range(8):
        env = read_env_log(root / "runs" / "np8" / f"device_{rank}" / "env.log")
        placed.setdefault(env["HCCL_IF_IP"], []).append(env["DEVICE_ID"])
    assert placed == {bed.mgmt_ip("h1"): ["0", "1", "2", "3"], bed.mgmt_ip("h2"): ["0", "1", "2", "3"]}


def test_a_chip_in_alarm_on_one_server_refuses_the_launch_naming_it(launch_bed):
    """npu-smi on h2 shows device 5 in Alarm and 6 Critical: refused in the pre-flight, before any rank exists anywhere."""
    bed, root = launch_bed
    fault = [SIM_PYTHON, str(sim_path(REPO_ROOT)), "-q", "fault", "--state", "/etc/ascend-sim", "chip-health"]
    bed.exec("h2", *fault, "--device", "5", "--status", "Alarm")
    bed.exec("h2", *fault, "--device", "6", "--status", "Critical")
    try:
        res = run_playbook(TRAIN, bed.inventory, extra_vars=bed_vars(launch_bed, "alarm", ascend_train_env={"STEPS": "1"}))
        assert res.rc != 0
        assert "chip health, nothing was started: npu-smi info shows device 5 (910B3): Alarm; device 6 (910B3): Critical" in res.stdout, (
            str(res)
        )
        assert "fatal: [h2]" in res.stdout and "fatal: [h1]" not in res.stdout
        assert not (root / "runs" / "alarm").exists()
        for host in bed.hosts:  # no job was recorded on either server
            assert "alarm" not in bed.exec(host, "ls", "-a", "/run/ascend-cluster/jobs", check=False).stdout
    finally:
        for device in ("5", "6"):
            bed.exec("h2", *fault, "--device", device, "--status", "OK")


SQUATTER = "import socket, sys, time; s = socket.socket(); s.bind(('0.0.0.0', int(sys.argv[1]))); s.listen(1); time.sleep(600)"


def test_a_taken_hccl_port_on_one_server_refuses_the_launch_naming_it(launch_bed):
    """Something on h2 (its own network namespace) listens on 60003, inside HCCL's host port range: refused, naming it."""
    bed, root = launch_bed
    marker = ("python3", "-c", SQUATTER, "60003")
    bed.exec("h2", "sh", "-c", f"setsid -f python3 -c \"{SQUATTER}\" 60003 </dev/null >/dev/null 2>&1")
    wait_for(lambda: len(pids_with_argv(*marker)) == 1, 10, "the process on port 60003")
    squatter = pids_with_argv(*marker)[0]
    wait_for(lambda: ":EA63 " in bed.exec("h2", "cat", "/proc/net/tcp").stdout, 10, "port 60003 (0xEA63) listening on h2")
    try:
        res = run_playbook(TRAIN, bed.inventory, extra_vars=bed_vars(launch_bed, "port", ascend_train_env={"STEPS": "1"}))
    finally:
        os.kill(squatter, signal.SIGKILL)
    assert res.rc != 0
    assert f"ports in use, nothing was started: TCP port 60003 is listened on by pid {squatter}" in res.stdout, str(res)
    assert "EI0019" in res.stdout
    assert "fatal: [h2]" in res.stdout and "fatal: [h1]" not in res.stdout
    assert not (root / "runs" / "port").exists()


def test_leftover_process_blocks_launch_until_kill_stale(launch_bed):
    bed, root = launch_bed
    # a process of an earlier, unmanaged run still holds NPU 3 of h2 (npu-smi lists it)
    marker = ("sleep", "6003")
    bed.exec("h2", "sh", "-c", "DEVICE_ID=3 setsid -f sleep 6003 </dev/null >/dev/null 2>&1")
    wait_for(lambda: len(pids_with_argv(*marker)) == 1, 10, "the leftover process")
    leftover = pids_with_argv(*marker)[0]
    try:
        blocked = run_playbook(TRAIN, bed.inventory, extra_vars=bed_vars(launch_bed, "blocked", ascend_train_env={"STEPS": "1"}))
        assert blocked.rc != 0
        assert "devices in use, nothing was started" in blocked.stdout, str(blocked)
        assert f"process {leftover} (sleep) holds NPU 3" in blocked.stdout, str(blocked)
        assert not (root / "runs" / "blocked").exists()
        assert alive(leftover)

        cleared = run_playbook(
            TRAIN, bed.inventory, extra_vars=bed_vars(launch_bed, "cleared", kill_stale=True, ascend_train_env={"STEPS": "1"})
        )
        assert cleared.rc == 0, str(cleared)
        assert not alive(leftover)
        assert sorted(states(launch_bed, "cleared")) == list(range(16))
    finally:
        if alive(leftover):
            os.kill(leftover, signal.SIGKILL)


def test_interrupted_controller_then_stop_leaves_nothing(launch_bed):
    bed, _root = launch_bed
    extra = bed_vars(launch_bed, "interrupted", ascend_train_env={"STEPS": "100000", "STEP_S": "0.5"})
    controller = subprocess.Popen(
        [str(BIN_DIR / "ansible-playbook"), str(TRAIN), "-i", str(bed.inventory), "-e", json.dumps(extra)],
        cwd=REPO_ROOT,
        env=ansible_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        wait_for(
            lambda: sum(s.get("phase") == "running" for s in states(launch_bed, "interrupted").values()) == 16, 300, "16 ranks running"
        )
    finally:
        os.killpg(controller.pid, signal.SIGKILL)  # the controller dies without cleaning up
        controller.wait()
    ranks = states(launch_bed, "interrupted")
    pids = [s["pid"] for s in ranks.values()] + [s["runner_pid"] for s in ranks.values()]
    assert all(alive(s["pid"]) for s in ranks.values())
    stop = run_playbook(STOP, bed.inventory, extra_vars={"ascend_hosts": "h1,h2", "ascend_launch_job_root": "/run/ascend-cluster/jobs"})
    assert stop.rc == 0, str(stop)
    assert not any(alive(p) for p in pids)
    assert all(s["phase"] in ("exited", "aborted") for s in states(launch_bed, "interrupted").values())


def test_an_unreachable_server_refuses_the_launch_unless_allow_partial(launch_bed):
    """Issue 13 F: h2's sshd stopped (SIGSTOP: it accepts no new session) - np=8 must not silently run all 8 ranks on h1."""
    bed, root = launch_bed
    sshd = bed.state["pids"]["h2"]
    # a fresh SSH connection for every run (no ControlPersist master from an earlier test reaching h2), quickly timed out
    env = {"ANSIBLE_SSH_ARGS": "-o ControlMaster=no", "ANSIBLE_TIMEOUT": "5"}
    os.kill(sshd, signal.SIGSTOP)
    try:
        refused = run_playbook(TRAIN, bed.inventory, env=env, extra_vars=bed_vars(launch_bed, "partial-refused", np=8))
        assert refused.rc != 0
        assert "server(s) h2 could not be reached or read" in refused.stdout, str(refused)
        assert "-e allow_partial=true" in refused.stdout
        assert not (root / "runs" / "partial-refused").exists()
        shrunk = run_playbook(
            TRAIN,
            bed.inventory,
            env=env,
            extra_vars=bed_vars(launch_bed, "partial", np=8, allow_partial=True, ascend_train_env={"STEPS": "1"}),
        )
    finally:
        os.kill(sshd, signal.SIGCONT)
    assert shrunk.rc == 0, str(shrunk)
    assert "allow_partial=true: training without h2" in shrunk.stdout
    ranks = states(launch_bed, "partial")
    assert sorted(ranks) == list(range(8)) and all(s["rc"] == 0 for s in ranks.values())
    table = json.loads((root / "runs" / "partial" / "rank_table.json").read_text())  # the job's own table
    assert [s["server_id"] for s in table["server_list"]] == [bed.mgmt_ip("h1")]  # all 8 ranks on h1, h2 left out


def _watched(launch_bed, job_id: str, output: Path) -> bool:
    """16 ranks running and the job's watch at work (it keeps the group's view on the controller once it read it)."""
    _bed, root = launch_bed
    running = sum(s.get("phase") == "running" for s in states(launch_bed, job_id).values()) if (root / "runs" / job_id).exists() else 0
    return running == 16 and (root / "controller" / job_id / "group.json").exists()


def _long_job_then(launch_bed, job_id: str, output: Path, act) -> tuple[subprocess.Popen, dict]:
    """Start a long 16-rank job, wait until it is watched, ``act(played, ranks)``, wait for the play; never leave it running."""
    bed, _root = launch_bed
    with open(output, "a") as out:
        played = start_playbook(
            TRAIN, bed.inventory, bed_vars(launch_bed, job_id, ascend_train_env={"STEPS": "100000", "STEP_S": "0.5"}), out
        )
    try:
        wait_for(lambda: _watched(launch_bed, job_id, output), 300, "16 ranks running and watched")
        ranks = states(launch_bed, job_id)
        act(played, ranks)
        played.wait(timeout=120)
    finally:
        if played.poll() is None:
            os.killpg(played.pid, signal.SIGKILL)
            played.wait()
    return played, ranks


def test_ctrl_c_stops_every_rank_on_both_servers_and_a_new_train_starts_at_once(launch_bed, tmp_path):
    """Issue 12 item 3 over real SSH: the operator's Ctrl-C (SIGINT to the playbook's process group) stops the job everywhere."""
    bed, _root = launch_bed
    output = tmp_path / "train.out"
    played, ranks = _long_job_then(launch_bed, "ctrlc", output, lambda played, _ranks: os.killpg(played.pid, signal.SIGINT))
    text = output.read_text()
    assert played.returncode != 0, text
    assert "[ctrlc] Ctrl-C on the controller: stopping job ctrlc on 2 server(s) - press Ctrl-C again within 1 s to leave it running" in text
    assert "[ctrlc] Ctrl-C on the controller: job ctrlc: 16 rank(s) on 2 server(s) stopped, their devices are free" in text, text
    after = states(launch_bed, "ctrlc")
    # h1's ranks by the abort line itself, h2's by the job's group passing it on from h1 (the coordinator's server)
    assert all(s["rc"] in (-15, -9) and "Ctrl-C on the controller (ansible-playbook of " in s["stopped_by"] for s in after.values()), after
    assert not any(alive(p) for s in ranks.values() for p in (s["pid"], s["runner_pid"]))
    again = run_playbook(TRAIN, bed.inventory, extra_vars=bed_vars(launch_bed, "afterctrlc", ascend_train_env={"STEPS": "1"}))
    assert again.rc == 0, str(again)  # the devices were free at once: no lock, no recorded job in the way


def test_a_runner_killed_by_sigkill_fails_the_job_naming_its_rank_and_nothing_is_left(launch_bed, tmp_path):
    """Issue 12 item 2 over real SSH: h2's rank 11 loses its runner to SIGKILL (it records nothing); its training runs on, orphaned."""
    bed, _root = launch_bed
    output = tmp_path / "train.out"
    played, ranks = _long_job_then(
        launch_bed, "runnerkill", output, lambda _played, ranks: os.kill(ranks[11]["runner_pid"], signal.SIGKILL)
    )
    text = output.read_text()
    assert played.returncode != 0, text
    assert f"{bed.mgmt_ip('h2')}: rank 11 lost - its runner died without recording an exit (killed -9?)" in text, text
    after = states(launch_bed, "runnerkill")
    assert after[11]["phase"] == "running"  # nobody recorded its end
    others = [after[r] for r in range(16) if r != 11]
    assert all(
        s["rc"] in (-15, -9) and s["stopped_by"].startswith("stopped by the job's group: rank 11 lost: ")
        for s in others
        if s["rank_id"] < 8
    ), others
    assert not any(alive(p) for s in ranks.values() for p in (s["pid"], s["runner_pid"]))  # the orphan too
    assert not any(group_alive(s["pid"]) for s in ranks.values())


def _standin_processes(run_dir: Path) -> list[int]:
    """Live HCCL stand-in processes working in ``run_dir`` (on any host: the bed shares this PID namespace)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if b"hccl_standin.py" in (entry / "cmdline").read_bytes() and os.readlink(entry / "cwd").startswith(str(run_dir)):
                    if alive(int(entry.name)):
                        found.append(int(entry.name))
            except OSError:
                continue
    return found


def test_hccl_standin_all_reduces_over_the_device_ips_then_a_cut_link_fails_the_job_with_ei0006(launch_bed):
    """Issue 12 item 4: the HCCL stand-in as the training, 16 ranks on h1 and h2, over the parameter plane.

    First run: every rank all-reduces 2 MiB over its device IPs and logs each link's bandwidth. Then h2's
    eth3 is cut: ranks 3 and 11 (device 3 of each server) cannot link, fail with EI0006 after
    HCCL_CONNECT_TIMEOUT naming the other's device IP, write a plog on their server, and the launcher
    stops every other rank. Issue 12 item 5: train's report prints the diagnosis line, and
    ascend.cluster.diagnose, run while the link is still cut, names EI0006, the cut NIC and its link DOWN.
    """
    bed, root = launch_bed
    standin = {
        "train_command": f"python3 {HCCL_STAND_IN} --size-mb 2",
        "ascend_hccl_connect_timeout": 20,  # below HCCL's 120-7200: the stand-in's own variable allows it
        "ascend_train_env": {"HCCL_STANDIN_ALLOW_SHORT_TIMEOUT": "1"},
    }
    res = run_playbook(TRAIN, bed.inventory, extra_vars=bed_vars(launch_bed, "hccl", **standin))
    assert res.rc == 0, str(res)
    digests = set()
    for rank in range(16):
        log = (root / "runs" / "hccl" / f"device_{rank}" / "train.log").read_text()
        result = json.loads(log.split("HCCL_STANDIN_RESULT ", 1)[1].splitlines()[0])
        digests.add(result["sha256"])
        host, device = 1 + rank // 8, rank % 8
        assert result["links"][0]["from_ip"] == f"198.19.{device}.{host}"  # its own device IP, from hccn_tool via the rank table
        plane = next(link for link in result["links"] if link["ring"] == f"plane {device} ring")
        assert (plane["to_ip"], plane["to_port"]) == (f"198.19.{device}.{3 - host}", 16666) and plane["mb_per_s"] > 0, log
    assert len(digests) == 1

    bed.cut("h2", 3)
    try:
        failed = run_playbook(TRAIN, bed.inventory, extra_vars=bed_vars(launch_bed, "hccl-cut", **standin))
        role_vars = {k: v for k, v in bed_vars(launch_bed, "hccl-cut").items() if k.startswith("ascend_") and k != "ascend_job_id"}
        diagnosed = run_playbook(DIAGNOSE, bed.inventory, extra_vars=dict(role_vars, job_id="hccl-cut", ascend_hccl_connect_timeout=20))
    finally:
        bed.restore("h2", 3)
    line = re.compile(r"diagnosis: EI0006 on ranks? (3|11|3, 11) from \d\d:\d\d:\d\d: h2 eth3 link DOWN - check the optics/cable")
    assert line.search(failed.stdout), str(failed)  # train's report on the failed job
    assert diagnosed.rc == 0 and line.search(diagnosed.stdout), str(diagnosed)
    # ranks 3 and 11 fail ms apart: the FAILED line names the one the job's group heard first, and diagnose the same one
    # (issue 25 item 4: it used to pick by the servers' own times, and could name the other)
    failed_line = re.search(r"FAILED: train hccl-cut: rank (3|11) \(server ", failed.stdout)
    assert failed_line, str(failed)
    named = int(failed_line.group(1))
    first_rank = rf"rank {named} \(h{1 if named < 8 else 2} device 3\)"
    assert re.search(rf'"EI0006 +(3|11|3, 11) +\d\d:\d\d:\d\d +{first_rank} +socket timeout', diagnosed.stdout), str(diagnosed)
    diagnosis = json.loads((root / "controller" / "hccl-cut" / "diagnosis.json").read_text())
    assert diagnosis["job_id"] == "hccl-cut" and diagnosis["rows"][0]["code"] == "EI0006", diagnosis
    assert (diagnosis["first"]["rank_id"], diagnosis["first"]["by"]) == (named, "the job's group"), diagnosis["first"]
    assert diagnosis["rows"][0]["seen_live"][0] == "h2 eth3 link DOWN - check the optics/cable", diagnosis
    assert sorted(map(tuple, diagnosis["involved"])) == [("h1", 3), ("h2", 3)], diagnosis
    first_row = next(r for r in diagnosis["ranks"] if r["code"] == "EI0006")
    assert first_row["plog_files"] and first_row["plog_files"][0].startswith("/root/ascend/log/debug/plog/plog-"), first_row
    assert failed.rc != 0
    cause = re.search(
        r"hccl_standin: EI0006 socket timeout: rank (3|11) \(device 3, 198\.19\.3\.([12])\) got no link to rank (11|3) 198\.19\.3\.([12]):16666 "
        r"within HCCL_CONNECT_TIMEOUT=20s",
        failed.stdout,
    )
    assert cause, str(failed)
    ranks = states(launch_bed, "hccl-cut")
    first = int(cause.group(1))
    assert ranks[first]["rc"] == 1
    assert all(s["rc"] in (1, -15, -9) for s in ranks.values()), ranks
    server = "h1" if first < 8 else "h2"
    plog = bed.exec(server, "sh", "-c", f"cat /root/ascend/log/debug/plog/plog-{ranks[first]['pid']}_*.log").stdout
    # the waiting rank names itself; its peer is the LINK_ERROR_INFO row's destination
    assert f"wait socket establish timeout, role[1] rank[{first}] timeout[20]" in plog, plog
    assert f"|  198.19.3.{2 if first == 3 else 1}({11 if first == 3 else 3})   |  16666  |" in plog, plog
    assert not any(alive(p) for s in ranks.values() for p in (s["pid"], s["runner_pid"]))
    assert not _standin_processes(root / "runs")  # nothing left on either host


def test_smoke_collective_reports_each_link_and_refuses_one_below_the_floor(launch_bed):
    """-e collective=true -e collective_mode=standin (the bed has no CANN hccl_test; each device IP is a host interface): the
    stand-in's all-reduce on 16 ranks; a floor no link reaches names every link with its bandwidth."""
    bed, root = launch_bed
    extra = {k: v for k, v in bed_vars(launch_bed, "unused").items() if k not in ("ascend_job_id", "train_command")}
    extra.update(collective=True, collective_mode="standin", collective_floor=1000000, collective_size_mb=1)
    res = run_playbook(SMOKE, bed.inventory, extra_vars=extra)
    assert res.rc != 0
    [summary_path] = [p for p in (root / "controller").glob("smoke-*/summary.json") if not p.parent.name.endswith("-collective")]
    summary = json.loads(summary_path.read_text())
    rows = [r for r in summary["rows"] if r["stage"] == "collective"]
    assert [(r["server"], r["device"], r["rank"], r["result"]) for r in rows] == [
        ("h1" if rank < 8 else "h2", rank % 8, rank, "FAIL") for rank in range(16)
    ], rows
    # rank 3 (h1 device 3) sends on its server ring to rank 4 and on the device-3 plane to rank 11 (h2 device 3)
    assert re.fullmatch(
        r"link 198\.19\.3\.1 -> rank 4 198\.19\.4\.1 \(server ring\): [0-9.]+ MB/s; "
        r"link 198\.19\.3\.1 -> rank 11 198\.19\.3\.2 \(plane 3 ring\): [0-9.]+ MB/s, below the floor of 1000000 MB/s",
        rows[3]["detail"],
    ), rows[3]
    assert "collective h2 device 3 rank 11: link 198.19.3.2 -> rank 12 198.19.4.2 (server ring)" in res.stdout, str(res)
    assert not _standin_processes(root / "runs")


def test_a_rank_hung_inside_a_collective_fails_the_job_as_a_stall_and_nothing_is_left(launch_bed):
    """Issue 24 item 4 over real SSH: the HCCL stand-in's rank 5 (h2) stops inside its third all-reduce and never comes
    back, as a rank stuck on a driver hang does. Every rank then waits on it and prints nothing - until HCCL's own
    HCCL_EXEC_TIMEOUT (1836 s) without the launch's stall detection. With -e stall_timeout_s=4 the job fails within
    seconds naming a stalled rank (its server, device, silence and last line), and every rank of both servers ends. (Every
    rank waits on rank 5, so every rank goes silent within milliseconds of the others: the rank named is the one whose
    runner noticed first, as on hardware; its stacks, with py-spy on the server, show where each waits.)"""
    standin = {
        "np": 8,  # 4 + 4: a hierarchical ring across the servers, every rank waiting on rank 5 once it hangs
        "train_command": f"python3 {HCCL_STAND_IN} --size-mb 0.25 --iters 100000 --step-log --hang-rank 5 --hang-step 3",
        "ascend_hccl_connect_timeout": 20,
        "ascend_train_env": {"HCCL_STANDIN_ALLOW_SHORT_TIMEOUT": "1"},
        "stall_timeout_s": 4,
    }
    res = run_playbook(TRAIN, launch_bed[0].inventory, extra_vars=bed_vars(launch_bed, "hccl-hang", **standin))
    assert res.rc != 0, str(res)
    stalled = re.search(
        r"rank (\d) \(server 198\.18\.\d+\.1[12], device \d\) failed first: stalled: no progress for [45] s; "
        r'last line: \\?"hccl_standin: (step 2 all-reduce done in [0-9.]+s|\d+ links up in [0-9.]+s \(HCCL_CONNECT_TIMEOUT 20s\))\\?"; '
        r"every rank was stopped",
        res.stdout,
    )
    assert stalled, str(res)
    ranks = states(launch_bed, "hccl-hang")
    assert sorted(ranks) == list(range(8)) and ranks[int(stalled.group(1))]["stalled"]["silent_s"] >= 4, ranks
    assert all(s["phase"] == "exited" and not alive(s["pid"]) and not group_alive(s["pid"]) for s in ranks.values()), ranks
    # noticed about stall_timeout_s after the hang, not after HCCL_EXEC_TIMEOUT: every rank ended within 15 s of its start
    assert max(s["ended"] for s in ranks.values()) - min(s["started"] for s in ranks.values()) < 20, ranks
