"""The job's group at more servers than forks, on the simulated local cluster (issue 24's figures).

Each figure is printed as one JSON line ``{"figure", "value", "unit", ...}``; every time is read from what the ranks
themselves wrote (their ``state.json``: ``ended``), so nothing the controller believes is taken as fact.

- ``failfast_s_<servers>x<devices>_forks<F>``: the last rank exits 1 at step ``--fail-step``; from its recorded end to
  the last other rank's recorded end, ``train.yml`` watched with ``forks=F``.
- ``failfast_s_detached_<servers>x<devices>``: the same with ``-e wait=false`` (no controller once the gate opened).
- ``stall_detect_s``: rank 0 stops printing (``STALL_RANK``) with ``-e stall_timeout_s=<--stall-timeout>``; from its
  last line (its start + (STALL_STEP - 1) x STEP_S) to the last rank's end.
- ``watch_controller_cpu_per_s_<servers>x<devices>``: the controller's CPU per second while it watches a running job:
  ``ansible-playbook``'s process tree (its workers, their shells) read from /proc twice, ``--long / 2`` seconds apart,
  once every rank runs. The job's supervisors, coordinator and ranks are daemons of their own sessions and do not
  count (on a real cluster they run on the servers).
- ``output_lines_<size>x<devices>`` / ``task_headers_<size>x<devices>`` (``--figures output``, at each of
  ``--watch-sizes``): the lines and the TASK headers a healthy train prints with the default callback (issue 27: the
  headers the same at any size), and ``output_lines_compact_<size>x<devices>`` with ``ascend.cluster.compact``.

    .venv/bin/python bench/bench_group.py [--servers 8] [--devices 2] [--forks 5] [--figures failfast,detached,stall,watch,output]
        [--watch-sizes 2,8,32] [--repeat 1]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench._cpu import children_cpu  # noqa: E402
from bench.bench_launch import SIM, STAND_IN, TRAIN  # noqa: E402
from tests.helpers.ansible_cli import PlaybookResult, run_playbook, start_playbook  # noqa: E402

GROUP_VARS = REPO / "examples" / "sim" / "group_vars" / "ascend.yml"
STEP_S = 0.2


def emit(figure: str, value: float, unit: str = "s", **more: object) -> None:
    print(json.dumps(dict(figure=figure, value=round(value, 3), unit=unit, where="sim", **more)), flush=True)


class Cluster:
    """A simulated cluster of ``servers`` x ``devices`` under ``root``, with an inventory of its own."""

    def __init__(self, root: Path, servers: int, devices: int) -> None:
        self.root, self.servers, self.devices = root, servers, devices
        args = [
            "cluster",
            "--root",
            str(root),
            "--servers",
            str(servers),
            "--chip",
            "910B",
            "--devices",
            str(devices),
            "--preset-ips",
            "--settle",
            "0",
        ]
        subprocess.run([sys.executable, str(SIM), "-q", *args, "--force"], check=True, capture_output=True)
        self.inventory = root / "inventory" / "hosts.yml"
        (self.inventory.parent / "group_vars").mkdir(parents=True, exist_ok=True)
        (self.inventory.parent / "group_vars" / "ascend.yml").write_text(GROUP_VARS.read_text())
        hosts = {f"server{i}": {"ascend_server_id": f"127.0.1.{i + 1}"} for i in range(servers)}
        self.inventory.write_text(json.dumps({"ascend": {"vars": {"ascend_sim_root": str(root)}, "hosts": hosts}}))

    @property
    def ranks(self) -> int:
        return self.servers * self.devices

    def train(
        self, job_id: str, env: dict, forks: int = 5, callback: str = "", **extra: object
    ) -> tuple[PlaybookResult, dict, float, float]:
        """``(result, states by rank, wall s, controller CPU s)`` of one train.yml."""
        extra_vars = {
            "ascend_sim_root": str(self.root),
            "np": self.ranks,
            "ascend_job_id": job_id,
            "train_command": f"bash {STAND_IN}",
            "ascend_train_env": env,
            "ascend_launch_progress_interval_s": 5,
            **extra,
        }
        wall, cpu = time.monotonic(), children_cpu()
        env = {"ANSIBLE_FORKS": str(forks), **({"ANSIBLE_STDOUT_CALLBACK": callback} if callback else {})}
        res = run_playbook(TRAIN, self.inventory, extra_vars=extra_vars, env=env, timeout=1800)
        return res, self.states(job_id), time.monotonic() - wall, children_cpu() - cpu

    def states(self, job_id: str) -> dict:
        found = {}
        for path in (self.root / "runs" / job_id).glob("device_*/state.json"):
            state = json.loads(path.read_text())
            found[state["rank_id"]] = state
        return found

    def wait_ended(self, job_id: str, timeout: float) -> dict:
        deadline = time.time() + timeout
        while time.time() < deadline:
            states = self.states(job_id)
            if len(states) == self.ranks and all(s.get("phase") == "exited" for s in states.values()):
                return states
            time.sleep(0.5)
        raise SystemExit(f"{job_id}: not every rank ended within {timeout} s")


def tree_cpu(root: int) -> float:
    """User + system seconds of process ``root`` and every descendant alive now (from /proc): the controller's
    ``ansible-playbook``, its workers and their shells. The job's supervisors and ranks are daemons of their own
    sessions, nobody's descendants: not counted."""
    children: dict = {}
    ticks: dict = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(entry.name))
        ticks[int(entry.name)] = int(fields[11]) + int(fields[12])
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        total += ticks.get(pid, 0)
        todo.extend(children.get(pid, []))
    return total / os.sysconf("SC_CLK_TCK")


def watch_cost(cluster: Cluster, job_id: str, seconds: float, forks: int) -> float:
    """The controller's CPU per second while it watches a running job: ``ansible-playbook``'s process tree, read twice
    ``seconds / 2`` apart once every rank runs (the launch before and the report after are left out)."""
    steps = int((seconds + 20) / STEP_S)
    extra = {"ascend_sim_root": str(cluster.root), "np": cluster.ranks, "ascend_job_id": job_id, "train_command": f"bash {STAND_IN}"}
    extra.update(ascend_train_env={"STEPS": str(steps), "STEP_S": str(STEP_S)}, ascend_launch_progress_interval_s=10)
    play = start_playbook(TRAIN, cluster.inventory, extra, subprocess.DEVNULL, env={"ANSIBLE_FORKS": str(forks)})
    try:
        deadline = time.time() + 900
        while sum(s.get("phase") == "running" for s in cluster.states(job_id).values()) < cluster.ranks:
            if time.time() > deadline or play.poll() is not None:
                raise SystemExit(f"{job_id}: the job did not get every rank running")
            time.sleep(0.5)
        time.sleep(3.0)  # the watch task under way
        first, began = tree_cpu(play.pid), time.monotonic()
        time.sleep(seconds / 2)
        cost = (tree_cpu(play.pid) - first) / (time.monotonic() - began)
        play.wait(timeout=seconds + 600)
    finally:
        if play.poll() is None:
            play.kill()
            play.wait()
    return round(cost, 4)


def failfast(states: dict, failing: int) -> float:
    if states[failing].get("rc") != 1:
        raise SystemExit(f"rank {failing} did not fail as asked: {states[failing]}")
    return max(s["ended"] for s in states.values()) - states[failing]["ended"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--servers", type=int, default=8)
    parser.add_argument("--devices", type=int, default=2)
    parser.add_argument("--forks", type=int, default=5)
    parser.add_argument("--fail-step", type=int, default=10)
    parser.add_argument("--stall-timeout", type=int, default=20)
    parser.add_argument("--figures", default="failfast,detached,stall,watch")  # and output
    parser.add_argument("--watch-sizes", default="2,8")
    parser.add_argument("--long", type=float, default=40.0)
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    figures = set(args.figures.split(","))
    with tempfile.TemporaryDirectory(prefix="bench-group-") as tmp:
        cluster = Cluster(Path(tmp) / "c", args.servers, args.devices)
        shape = f"{args.servers}x{args.devices}"
        last = cluster.ranks - 1
        crash = {"STEPS": "400", "STEP_S": str(STEP_S), "FAIL_RANK": str(last), "FAIL_STEP": str(args.fail_step)}
        for run in range(args.repeat):
            if "failfast" in figures:
                _res, states, wall, cpu = cluster.train(f"ff{run}", crash, forks=args.forks)
                emit(f"failfast_s_{shape}_forks{args.forks}", failfast(states, last), play_wall_s=round(wall, 1), play_cpu_s=round(cpu, 1))
            if "detached" in figures:
                _res, _states, _wall, _cpu = cluster.train(f"dt{run}", crash, forks=args.forks, wait=False)
                states = cluster.wait_ended(f"dt{run}", 120)
                emit(f"failfast_s_detached_{shape}", failfast(states, last))
            if "stall" in figures:
                stall_step = 5
                env = {"STEPS": "2000", "STEP_S": str(STEP_S), "STALL_RANK": "0", "STALL_STEP": str(stall_step)}
                _res, states, _wall, _cpu = cluster.train(f"st{run}", env, forks=args.forks, stall_timeout_s=args.stall_timeout)
                silent_from = states[0]["started"] + (stall_step - 1) * STEP_S
                emit("stall_detect_s", max(s["ended"] for s in states.values()) - silent_from, stall_timeout_s=args.stall_timeout)
        if "watch" in figures:
            for size in (int(n) for n in args.watch_sizes.split(",")):
                sized = Cluster(Path(tmp) / f"w{size}", size, args.devices)
                rounds = [watch_cost(sized, f"w{run}", args.long, args.forks) for run in range(args.repeat)]
                emit(
                    f"watch_controller_cpu_per_s_{size}x{args.devices}",
                    statistics.median(rounds),
                    unit="CPU-s/s",
                    forks=args.forks,
                    rounds=rounds,
                )
        if "output" in figures:
            for size in (int(n) for n in args.watch_sizes.split(",")):
                sized = Cluster(Path(tmp) / f"o{size}", size, args.devices)
                shape = f"{size}x{args.devices}"
                for callback, name in (("", "output_lines"), ("ascend.cluster.compact", "output_lines_compact")):
                    res, _states, wall, cpu = sized.train(
                        f"o{name[-7:]}", {"STEPS": "2", "STEP_S": "0.1"}, forks=args.forks, callback=callback
                    )
                    if res.rc != 0:
                        raise SystemExit(f"train on {shape} failed:\n{res}")
                    out = res.stdout
                    emit(f"{name}_{shape}", len(out.splitlines()), unit="lines", play_wall_s=round(wall, 1), play_cpu_s=round(cpu, 1))
                    if not callback:
                        emit(f"task_headers_{shape}", out.count("\nTASK ["), unit="headers")
    return 0


if __name__ == "__main__":
    sys.exit(main())
