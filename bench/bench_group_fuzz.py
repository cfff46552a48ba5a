"""The job's group under a long fuzz run (issue 34): >= 100 000 hostile frames at a live job's coordinator, no effect.

A real job on this machine, as the launch role starts it: two "servers" (directories of their own), each a detached
``training_ranks`` supervisor with two ranks (``sleep``), the coordinator a daemon forked by server a's, every member
joined and every rank running, the loss window the default 3 s. Then, at its port:

- the issue's attacks: every line of ``tests/helpers/hostile.py``'s ``ADVERSARIAL``, a newline then a stream of zero
  bytes, fifteen 9 MiB lines at once;
- generated frames (hypothesis, random seed): lines of any shape from connections that never join, and sealed
  messages of any shape from a connection joined with server b's own key (what training code on b can read).

Throughout, a thread reads the coordinator's ``group.json`` every 0.1 s: its ``updated`` (rewritten every heartbeat
round) must keep moving. At the end every rank must still run (its state.json ``running``, its process alive), no
server has an abort file, and the group is ``running`` with both members joined and nobody lost.

Figures (one JSON line each, ``{"figure", "value", "unit", ...}``):

- ``fuzz_frames``: frames thrown (lines, or parts of lines a connection ended with), ``fuzz_connections``;
- ``fuzz_job_effects``: what changed in the job (ranks not running, abort files, a member not joined, a stop): 0;
- ``fuzz_coordinator_round_gap_max_s``: the longest the coordinator's ``group.json`` went unrewritten meanwhile (it is
  rewritten every 0.5 s; the members lose the coordinator at 3 s);
- ``fuzz_s``: the run's wall time.

    .venv/bin/python bench/bench_group_fuzz.py [--frames 100000]
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.helpers.collection import install_import_path  # noqa: E402

install_import_path()

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from ansible_collections.ascend.cluster.plugins.module_utils import _job_control as control  # noqa: E402
from ansible_collections.ascend.cluster.plugins.module_utils import _job_files as files  # noqa: E402
from ansible_collections.ascend.cluster.plugins.module_utils import _job_group as group  # noqa: E402
from tests.helpers import hostile  # noqa: E402
from tests.helpers.ansible_cli import run_module  # noqa: E402
from tests.helpers.procs import alive, wait_for  # noqa: E402

SECRET = "the-fuzzed-jobs-secret"
JOB = "fuzz"


def emit(figure: str, value: float, unit: str, **more: object) -> None:
    print(json.dumps(dict(figure=figure, value=round(value, 3), unit=unit, where="local", **more)), flush=True)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Job:
    """Servers a (coordinator, ranks 0-1) and b (ranks 2-3) under ``root``, started as the launch role starts them."""

    def __init__(self, root: Path, port: int) -> None:
        self.root, self.port = root, port
        self.servers = {"a": [0, 1], "b": [2, 3]}
        for name, ranks in self.servers.items():
            jobs = root / name / "jobs"
            entries = [{"rank_id": r, "device_id": i} for i, r in enumerate(ranks)]
            cfg = {"address": "127.0.0.1", "port": port, "host": name, "server": name, "coordinator": name == "a"}
            cfg.update(hosts=["a", "b"] if name == "a" else [], lost_after=group.LOST_AFTER_S, gate_margin=0.3, clock_offset=0.0)
            args = {
                "job_id": JOB,
                "job_root": str(jobs),
                "run_dir": str(root / "runs"),
                "lock_dir": str(root / name / "locks"),
                "argv": ["sleep", "3600"],
                "ranks": entries,
                "local_count": 2,
                "rank_size": 4,
                "rank_table_path": "/x.json",
                "set_env": str(root / "absent.sh"),
                "kill_grace": 1.0,
                "detach": True,
                "group": cfg,
                # what the training_ranks action gives each server: the secret to the coordinator's, a key to the others
                "group_secret": SECRET if name == "a" else group.member_key(SECRET, JOB, name),
            }
            control.record_job(str(jobs), {"job_id": JOB, "run_dir": str(root / "runs"), "ranks": entries})
            result = run_module("training_ranks", args, timeout=120)
            if result.get("failed"):
                raise SystemExit(f"server {name} did not start: {result.get('msg')}")
        wait_for(lambda: all(self.state(r).get("phase") == "running" for r in range(4)), 60, "4 ranks running")
        self.pids = {r: self.state(r)["pid"] for r in range(4)}

    def state(self, rank: int) -> dict:
        path = self.root / "runs" / f"device_{rank}" / files.STATE_FILE
        return json.loads(path.read_text()) if path.exists() else {}

    def view(self) -> dict:
        return files.read_json(str(self.root / "a" / "jobs" / JOB / files.GROUP_FILE), {}) or {}

    def effects(self) -> list:
        """Everything that says the job was touched; [] when it was not."""
        found = [f"rank {r} {self.state(r).get('phase')}" for r in range(4) if self.state(r).get("phase") != "running"]
        found += [f"rank {r}'s process gone" for r, pid in self.pids.items() if not alive(pid)]
        found += [f"abort on {name}" for name in self.servers if (self.root / name / "jobs" / JOB / files.ABORT_FILE).exists()]
        view = self.view()
        found += [] if view.get("status") == group.RUNNING else [f"group {view.get('status')}"]
        found += [] if view.get("stop_reason") is None else [f"stop: {view['stop_reason']}"]
        found += [f"member {h} {m.get('state')}" for h, m in (view.get("members") or {}).items() if m.get("state") != "joined"]
        return found

    def stop(self) -> None:
        files.record_abort(str(self.root / "a" / "jobs" / JOB), "the fuzz run is over")
        wait_for(lambda: self.view().get("status") == group.ENDED, 60, "the group to end")


class Rounds(threading.Thread):
    """Reads the coordinator's group.json every 0.1 s; ``gap``: the longest its ``updated`` stood still."""

    def __init__(self, job: Job) -> None:
        super().__init__(daemon=True)
        self.job, self.gap, self.halt = job, 0.0, threading.Event()

    def run(self) -> None:
        last, since = None, time.monotonic()
        while not self.halt.wait(0.1):
            updated = self.job.view().get("updated")
            now = time.monotonic()
            if updated != last:
                last, since = updated, now
            self.gap = max(self.gap, now - since)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--frames", type=int, default=100_000, help="frames to throw (at least)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ascend-fuzz-") as tmp:
        job = Job(Path(tmp), free_port())
        rounds = Rounds(job)
        rounds.start()
        began = time.monotonic()
        count = {"frames": 0, "connections": 0}
        try:
            for line in hostile.ADVERSARIAL.values():
                hostile.throw(job.port, line)
            hostile.stream(job.port, b"x\n" + b"\0" * 65536, b"\0" * 65536, seconds=group.LOST_AFTER_S + 2)
            big = b"7" * (9 * hostile.MIB) + b"\n"
            hostile.in_parallel([lambda: hostile.throw(job.port, big, wait=30) for _n in range(15)])  # the coordinator: a process
            count["frames"] += len(hostile.ADVERSARIAL) + 16
            count["connections"] += len(hostile.ADVERSARIAL) + 16
            outside_examples = max(1, int(args.frames * 0.8 / 2.5))  # lists of 1-4 frames: 2.5 on average
            inside_examples = max(1, int(args.frames * 0.2 / 2.5))

            @settings(max_examples=outside_examples, database=None, deadline=None, suppress_health_check=list(HealthCheck))
            @given(st.lists(hostile.unjoined_frames(), min_size=1, max_size=4))
            def from_outside(lines: list) -> None:
                hostile.throw(job.port, b"".join(lines))
                count["frames"] += len(lines)
                count["connections"] += 1

            @settings(max_examples=inside_examples, database=None, deadline=None, suppress_health_check=list(HealthCheck))
            @given(st.lists(hostile.sealed_bodies(), min_size=1, max_size=4))
            def from_inside(bodies: list) -> None:
                insider = hostile.Insider(job.port, JOB, "b", group.member_key(SECRET, JOB, "b"))
                count["connections"] += 1
                try:
                    for body in bodies:
                        count["frames"] += 1
                        if not insider.send(body):
                            break
                finally:
                    insider.close()

            while count["frames"] < args.frames:
                from_outside()
                from_inside()
            time.sleep(2 * group.HEARTBEAT_S)
            wait_for(lambda: all(m.get("state") == "joined" for m in job.view().get("members", {}).values()), 10, "b joined again")
            effects = job.effects()
        finally:
            rounds.halt.set()
            rounds.join(5)
            took = time.monotonic() - began
            job.stop()
        emit("fuzz_frames", count["frames"], "frames", connections=count["connections"])
        emit("fuzz_job_effects", len(effects), "count", effects=effects)
        emit("fuzz_coordinator_round_gap_max_s", rounds.gap, "s", lost_after=group.LOST_AFTER_S)
        emit("fuzz_s", took, "s", cpus=os.cpu_count())
        return 0 if not effects and rounds.gap < group.LOST_AFTER_S else 1


if __name__ == "__main__":
    sys.exit(main())
