"""Launch benchmarks: ``launch_skew_s`` and ``failfast_s`` of ascend.cluster.train.

- ``launch_skew_s``: 2 servers x 8 ranks; the spread (max - min) of the ranks' OWN start
  timestamps (the stand-in command prints ``date +%s.%N`` as its first act). Target <= 1.0 s.
- ``failfast_s``: one rank exits 1 mid-run; from that rank's recorded end to the last other
  rank's recorded end (every rank gone). Target <= 5 s.
- ``train_2x8_s`` / ``train_2x8_controller_cpu_s``: the successful run's whole ``train.yml``
  (stand-in training of 3 s: 10 steps of 0.3 s), wall time and CPU seconds of ``ansible-playbook``
  and every process it waited for (on the simulated cluster that includes the modules, which run
  locally; the detached ranks are not counted).

- ``--clock-offset N`` (bed only): h2's clock runs N seconds off (``bed.py clock``); the skew is
  then computed from corrected start times (h2's own timestamps minus N), i.e. how well the
  pre-flight's measured offset lines the gate up. ``clock_sample_controller_cpu_s``: CPU seconds
  one clock reading (``ascend.cluster.clock_offset``) costs the controller per server, from ad-hoc
  runs with 1 and 21 samples on h1 and h2.

- ``--host-death``: instead of the above, a job of 16 ranks that runs until stopped; once every
  rank runs, h2 (ranks 8..15) dies. On the bed its management link goes down (``bed.py
  mgmt-down``): ``host_death_detect_s`` is from just before that to the moment the job's group decided to stop
  (``stopped_at`` in its view, which the watch keeps on the controller): h2's heartbeats stopped. On the simulated cluster server1's runners and
  trainings are killed with SIGKILL instead: ``runner_death_detect_s``, the same span. With both,
  ``host_death_stopped_s``: until the last rank of the surviving server ended (its recorded end).
  Target <= 5 s (issue 12). Afterwards h2 comes back (its ranks stopped themselves on losing the coordinator; stop.yml checks).

Where: ``--where bed`` (default when root and the test bed works) runs over real SSH against a
2-host test bed (tests/testbed/bed.py); ``--where sim`` on the simulated local 2 x 8 cluster.
Each figure is printed as ``{"figure": NAME, "value": NUMBER, "unit": "s", "where": ...}``.

    .venv/bin/python bench/bench_launch.py [--where bed|sim] [--repeat 3] [--no-failfast] [--clock-offset -30] [--host-death]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench._cpu import children_cpu  # noqa: E402
from tests.helpers.ansible_cli import run_adhoc, run_playbook, start_playbook  # noqa: E402

TRAIN = REPO / "playbooks" / "train.yml"
STOP = REPO / "playbooks" / "stop.yml"
STAND_IN = REPO / "examples" / "train" / "train_1p.sh"
SIM = REPO / "simulator" / "bin" / "ascend-sim"
_START = re.compile(r"^start rank=(\d+) .* at (\d+\.\d+)", re.MULTILINE)


def sim_target(root: Path) -> tuple[Path, dict, Path]:
    """(inventory, extra vars, run root) for the simulated local cluster under ``root``."""

    subprocess.run(
        [
            sys.executable,
            str(SIM),
            "-q",
            "cluster",
            "--root",
            str(root),
            "--servers",
            "2",
            "--chip",
            "910B",
            "--devices",
            "8",
            "--preset-ips",
            "--settle",
            "0",
            "--force",
        ],
        check=True,
        capture_output=True,
    )
    extra = {
        "ascend_sim_root": str(root),
        "ascend_launch_run_root": f"{root}/runs",
        "ascend_launch_job_root": "{{ ascend_sim_server }}/jobs",
        "ascend_launch_lock_dir": "{{ ascend_sim_server }}/locks",
        "ascend_launch_controller_dir": f"{root}/controller",
        "ascend_launch_extra_env": {"ASCEND_SIM_STATE": "{{ ascend_sim_server }}/state"},
    }
    return REPO / "examples" / "sim" / "inventory.yml", extra, root / "runs"


def bed_target(root: Path, bed) -> tuple[Path, dict, Path]:
    """(inventory, extra vars, run root) for a running test bed (run dirs on the shared /var/tmp).

    Device IPs follow docs/testbed.md's plan: 198.19.<device>.<host index>/24.
    """
    for index, host in enumerate(bed.hosts, start=1):
        for device in range(8):
            bed.exec(host, "hccn_tool", "-i", str(device), "-ip", "-s", "address", f"198.19.{device}.{index}", "netmask", "255.255.255.0")
    extra = {
        "ascend_hosts": "h1,h2",
        "ascend_launch_run_root": f"{root}/runs",
        "ascend_launch_job_root": "/run/ascend-cluster/jobs",
        "ascend_launch_controller_dir": f"{root}/controller",
    }
    return bed.inventory, extra, root / "runs"


def open_target(where: str, root: Path, hosts: int = 2) -> tuple[Any, tuple[Path, dict, Path], str]:
    """``(bed or None, (inventory, extra vars, run root), where in words)``: a test bed of ``hosts`` hosts brought up
    (``bed``; the caller takes it down; the job runs on h1 and h2) or the simulated local 2 x 8 cluster (``sim``), for the
    benches' ``--where``."""
    if where == "bed":
        from tests.testbed.harness import Bed, unique_prefix

        bed = Bed.up(unique_prefix(), hosts)
        return bed, bed_target(root, bed), f"testbed {hosts} hosts x 8 ranks over ssh"
    return None, sim_target(root), "simulated local cluster 2 x 8 (local connection)"


def one_run(inventory: Path, extra: dict, runs: Path, env: dict, cost: dict | None = None) -> tuple[dict, str]:
    """Run train.yml once; the ranks' states (with their own start time) and the output.

    ``cost``, when given, receives the run's ``wall_s`` and ``cpu_s`` (see the module docstring).
    """
    job_id = f"bench{len(list(runs.iterdir())) if runs.exists() else 0}"
    wall, cpu = time.monotonic(), children_cpu()
    res = run_playbook(
        TRAIN,
        inventory,
        extra_vars=dict(extra, np=16, ascend_job_id=job_id, ascend_train_env=env, train_command=f"bash {STAND_IN}"),
        timeout=1200,
    )
    if cost is not None:
        cost.update(wall_s=time.monotonic() - wall, cpu_s=children_cpu() - cpu)
    states = {}
    for path in (runs / job_id).glob("device_*/state.json"):
        state = json.loads(path.read_text())
        log = (path.parent / "train.log").read_text()
        match = _START.search(log)
        state["own_start"] = float(match.group(2)) if match else None
        states[state["rank_id"]] = state
    return states, res.stdout if res.rc == 0 or env.get("FAIL_RANK") else str(res)


def launch_skew(states: dict, out: str, h2_offset: float = 0.0) -> float:
    """Spread of the ranks' own start timestamps; h2's (ranks 8..15) taken back by its clock offset."""
    starts = [s["own_start"] for s in states.values()]
    if len(starts) != 16 or None in starts:
        raise SystemExit(f"expected 16 ranks with a start timestamp, got {len(starts)}:\n{out[-3000:]}")
    corrected = [s["own_start"] - (h2_offset if rank >= 8 else 0.0) for rank, s in states.items()]
    return max(corrected) - min(corrected)


def clock_sample_cpu(inventory: Path) -> float:
    """Controller CPU seconds of one clock reading per server (ad-hoc clock_offset, 21 samples minus 1)."""
    used = []
    for samples in (1, 21):
        before = children_cpu()
        results = run_adhoc("h1,h2", "ascend.cluster.clock_offset", f"samples={samples}", inventory)
        if sorted(results) != ["h1", "h2"] or any(r["_status"] != "SUCCESS" for r in results.values()):
            raise SystemExit(f"clock_offset failed: {results}")
        used.append(children_cpu() - before)
    return (used[1] - used[0]) / 20 / 2


def failfast(states: dict, failing: int) -> float:
    others = [s["ended"] for r, s in states.items() if r != failing]
    return max(others) - states[failing]["ended"]


def _states(runs: Path, job_id: str) -> dict:
    found = {}
    for path in (runs / job_id).glob("device_*/state.json"):
        try:
            state = json.loads(path.read_text())
        except ValueError:  # being replaced
            continue
        found[state["rank_id"]] = state
    return found


def host_death(inventory: Path, extra: dict, runs: Path, bed) -> tuple[float, float]:
    """One run of ``--host-death`` (see the module docstring): (detect_s, stopped_s)."""
    job_id = f"death{len(list(runs.iterdir())) if runs.exists() else 0}"
    variables = dict(
        extra, np=16, ascend_job_id=job_id, ascend_train_env={"STEPS": "100000", "STEP_S": "0.5"}, train_command=f"bash {STAND_IN}"
    )
    view_file = Path(extra["ascend_launch_controller_dir"]) / job_id / "group.json"  # the group's last view, kept by the watch
    with tempfile.TemporaryFile("w+") as out:
        play = start_playbook(TRAIN, inventory, variables, out)
        try:
            deadline = time.time() + 600
            while sum(s.get("phase") == "running" for s in _states(runs, job_id).values()) < 16:
                if time.time() > deadline or play.poll() is not None:
                    out.seek(0)
                    raise SystemExit(f"the job did not get 16 ranks running:\n{out.read()[-3000:]}")
                time.sleep(0.2)
            time.sleep(1.0)  # then mid-job: the death falls anywhere in the heartbeats' cycle
            running = _states(runs, job_id)
            died = time.time()
            if bed is not None:
                bed.mgmt_down("h2")
            else:
                for rank in range(8, 16):  # runners first: a training killed before its runner is an exit it records
                    os.kill(running[rank]["runner_pid"], signal.SIGKILL)
                for rank in range(8, 16):
                    os.killpg(running[rank]["pid"], signal.SIGKILL)
            try:
                play.wait(timeout=300)
            finally:
                if bed is not None:
                    bed.mgmt_up("h2")
        finally:
            if play.poll() is None:
                os.killpg(play.pid, signal.SIGKILL)
                play.wait()
        out.seek(0)
        played = out.read()
    if bed is not None:  # h2's ranks ran on, cut off
        run_playbook(STOP, inventory, env={"ANSIBLE_SSH_ARGS": "-o ControlMaster=no"}, extra_vars=dict(extra, ascend_hosts="h2"))
    if not re.search(r"ranks 8-15 lost", played) or not view_file.exists():
        raise SystemExit(f"the job did not fail naming ranks 8-15 as lost:\n{played[-3000:]}")
    view = json.loads(view_file.read_text())
    states = _states(runs, job_id)
    # found: the moment the job's group decided to stop (h2 lost: its heartbeats stopped; or its supervisor told
    # the group of its lost ranks), on the coordinator's clock - this machine's, on the bed and the simulated cluster
    return view["stopped_at"] - died, max(states[r]["ended"] for r in range(8)) - died


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--where", choices=["bed", "sim"], default="bed" if os.geteuid() == 0 else "sim")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--no-failfast", action="store_true", help="only the successful run (launch_skew_s, train_2x8_*)")
    parser.add_argument("--clock-offset", type=int, default=0, help="bed only: run h2's clock this many seconds off (e.g. -30)")
    parser.add_argument("--host-death", action="store_true", help="only host_death_detect_s (bed) / runner_death_detect_s (sim)")
    args = parser.parse_args()
    if args.clock_offset and args.where != "bed":
        parser.error("--clock-offset needs --where bed (it shifts a bed host's clock)")
    root = Path(tempfile.mkdtemp(prefix="bench-launch-", dir="/var/tmp"))
    bed = None
    try:
        bed, target, where = open_target(args.where, root)
        if bed is not None and args.clock_offset:
            bed.clock("h2", args.clock_offset)
            target[1]["ascend_launch_allow_clock_skew"] = True  # the figure is the gate's, not the policy's
            where += f", h2's clock {args.clock_offset:+d} s off"
        skews, fails, walls, cpus = [], [], [], []
        detects, stops = [], []
        for _run in range(args.repeat if args.host_death else 0):
            detect, stopped = host_death(*target, bed)
            detects.append(detect)
            stops.append(stopped)
        for _run in range(0 if args.host_death else args.repeat):
            cost: dict = {}
            states, out = one_run(*target, {"STEPS": "10", "STEP_S": "0.3"}, cost)
            skews.append(launch_skew(states, out, args.clock_offset))
            walls.append(cost["wall_s"])
            cpus.append(cost["cpu_s"])
            if args.no_failfast:
                continue
            states, out = one_run(*target, {"STEPS": "600", "STEP_S": "0.1", "FAIL_RANK": "11", "FAIL_STEP": "20"})
            if "rank 11 " not in out or states[11]["rc"] != 1:
                raise SystemExit(f"the failing run did not fail on rank 11:\n{out[-3000:]}")
            fails.append(failfast(states, 11))
        clock_cpu = [clock_sample_cpu(target[0])] if bed is not None and not args.host_death else []
        figures = (
            ("host_death_detect_s" if bed is not None else "runner_death_detect_s", detects, "max"),
            ("host_death_stopped_s", stops, "max"),
            ("launch_skew_s", skews, "max"),
            ("clock_sample_controller_cpu_s", clock_cpu, "max"),
            ("failfast_s", fails, "max"),
            ("train_2x8_s", walls, "median"),
            ("train_2x8_controller_cpu_s", cpus, "median"),
        )
        for name, values, statistic in figures:
            if not values:
                continue
            value = max(values) if statistic == "max" else sorted(values)[len(values) // 2]
            print(
                json.dumps(
                    {
                        "figure": name,
                        "value": round(value, 3),
                        "unit": "s",
                        "where": where,
                        "runs": [round(v, 3) for v in values],
                        "statistic": statistic,
                    }
                )
            )
    finally:
        if bed is not None:
            bed.down()
    return 0


if __name__ == "__main__":
    sys.exit(main())
