"""training_ranks with ``group``: two servers' supervisors (real processes, on loopback) in one job's group.

Each "server" is a directory of its own (job records, runs, locks) and a supervisor started by the module with
``detach``, as the launch role starts it; the test plays the controller: it asks the coordinator for the gate and
reads what the runners and the coordinator wrote.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import time
from pathlib import Path

from ansible_collections.ascend.cluster.plugins.module_utils import _job_control as control
from ansible_collections.ascend.cluster.plugins.module_utils import _job_files as files
from ansible_collections.ascend.cluster.plugins.module_utils import _job_group as group
from ansible_collections.ascend.cluster.plugins.plugin_utils import _watch as watch
from tests.helpers.ansible_cli import run_module
from tests.helpers.procs import alive, wait_for

SECRET = "s3cret-of-this-job"
# rank FAIL_RANK fails a second after the start; every other rank would run a minute (RUN_S seconds, then exit 0)
COMMAND = ["sh", "-c", 'if [ "$RANK_ID" = "${FAIL_RANK:-none}" ]; then sleep 1; exit 1; fi; exec sleep "${RUN_S:-60}"']


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Server:
    def __init__(self, root: Path, name: str, ranks: list) -> None:
        self.name, self.ranks = name, [{"rank_id": r, "device_id": i} for i, r in enumerate(ranks)]
        self.jobs, self.run, self.locks = root / name / "jobs", root / "runs", root / name / "locks"

    @property
    def job_dir(self) -> Path:
        return self.jobs / "j"

    def states(self) -> dict:
        job = control.load_job(str(self.jobs), "j")
        return {r["rank_id"]: r for r in control.rank_states(str(self.jobs), job)}

    def raw(self, rank: int) -> dict:
        """The rank's state.json, {} before its runner has written it (a loaded machine starts runners late)."""
        path = self.run / f"device_{rank}" / files.STATE_FILE
        return json.loads(path.read_text()) if path.exists() else {}


def stage_args(tmp_path, server: Server, group_cfg: dict, rank_size: int, env: dict | None = None, **more) -> dict:
    """The stage's options for ``server`` as the launch role gives them (detached, in the job's group ``group_cfg``)."""
    return {
        "job_id": "j",
        "job_root": str(server.jobs),
        "run_dir": str(server.run),
        "lock_dir": str(server.locks),
        "argv": COMMAND,
        "ranks": server.ranks,
        "local_count": 2,
        "rank_size": rank_size,
        "rank_table_path": "/x.json",
        "set_env": str(tmp_path / "absent.sh"),
        "kill_grace": 1.0,
        "env": env or {},
        "detach": True,
        "group": group_cfg,
        "group_secret": SECRET,
        **more,
    }


def launch(tmp_path, port: int, env: dict | None = None, lost_after: float = 1.5, offsets: dict | None = None, **more) -> tuple:
    """Servers a (coordinator, ranks 0-1) and b (ranks 2-3), each started as the launch role starts it; the group opens
    the gate by itself once every rank is staged.

    ``offsets``: a server's clock offset against the controller, as the pre-flight would have measured it.
    """
    a, b = Server(tmp_path, "a", [0, 1]), Server(tmp_path, "b", [2, 3])
    results = {}
    for server in (a, b):
        control.record_job(str(server.jobs), {"job_id": "j", "run_dir": str(server.run), "ranks": server.ranks})
        group_cfg = {"address": "127.0.0.1", "port": port, "host": server.name, "server": f"10.0.0.{1 if server is a else 2}"}
        group_cfg.update(coordinator=server is a, hosts=["a", "b"] if server is a else [], lost_after=lost_after, gate_margin=0.3)
        group_cfg["clock_offset"] = (offsets or {}).get(server.name, 0.0)
        args = stage_args(tmp_path, server, group_cfg, rank_size=4, env=env or {}, **more)
        if server is b:  # what the training_ranks action gives a server other than the coordinator's: its own key
            args["group_secret"] = group.member_key(SECRET, "j", "b")
        results[server.name] = run_module("training_ranks", args, timeout=60)
        assert not results[server.name].get("failed"), results[server.name]
        assert SECRET not in json.dumps(results[server.name])  # never returned
    # started: running, or already ended (a rank told to fail may be done before a loaded machine shows all four running)
    wait_for(
        lambda: all(s.get("phase") in ("running", "exited") for srv in (a, b) for s in map(srv.raw, (r["rank_id"] for r in srv.ranks))),
        30,
        "4 ranks started",
    )
    return a, b, results


def view(a: Server) -> dict:
    return json.loads((a.job_dir / files.GROUP_FILE).read_text())


def test_a_failure_on_one_server_stops_the_other_through_the_group(tmp_path):
    a, b, _results = launch(tmp_path, free_port(), env={"FAIL_RANK": "3"})
    wait_for(lambda: view(a)["status"] == group.ENDED, 30, "the group to end")
    final = view(a)
    assert final["outcome"] == group.FAILED and final["cause"]["rank_id"] == 3 and final["cause"]["host"] == "b", final
    assert [(r["rank_id"], r["state"]) for r in final["ranks"]] == [(0, "stopped"), (1, "stopped"), (2, "stopped"), (3, "failed")]
    crash = b.raw(3)["ended"]
    assert all(srv.raw(r)["ended"] - crash < 1.0 for srv, r in ((a, 0), (a, 1), (b, 2))), "every rank ended within 1 s of the crash"
    assert a.raw(0)["stopped_by"] == "stopped by the job's group: rank 3 failed (rc=1) on 10.0.0.2"
    assert os.stat(a.job_dir / files.SECRET_FILE).st_mode & 0o777 == 0o600 and (a.job_dir / files.SECRET_FILE).read_text() == SECRET
    # b holds its own key only, with which it can join as b and as no other server
    assert (b.job_dir / files.SECRET_FILE).read_text() == group.member_key(SECRET, "j", "b") != SECRET
    assert json.loads((b.job_dir / files.MEMBER_FILE).read_text())["state"] == "left"


def test_without_fail_fast_a_failure_on_one_server_stops_nobody_and_the_watch_says_so(tmp_path):
    """fail_fast=false: rank 3 fails on b a second after the start; the other three ranks, on both servers, run to their
    own end (exit 0 after RUN_S s); the group ends failed with no cause, and the watch's message says how they ended."""
    a, b, _results = launch(tmp_path, free_port(), env={"FAIL_RANK": "3", "RUN_S": "4"}, fail_fast=False)
    wait_for(lambda: view(a)["status"] == group.ENDED, 30, "the group to end")
    final = view(a)
    assert final["fail_fast"] is False and final["outcome"] == group.FAILED and final["cause"] is None, final
    assert [(r["rank_id"], r["state"]) for r in final["ranks"]] == [(0, "done"), (1, "done"), (2, "done"), (3, "failed")]
    assert not (a.job_dir / files.ABORT_FILE).exists() and not (b.job_dir / files.ABORT_FILE).exists()
    crash = b.raw(3)["ended"]
    assert all(srv.raw(r)["ended"] - crash > 2.0 for srv, r in ((a, 0), (a, 1), (b, 2))), "every other rank ran on"
    found = watch.verdict("j", final)
    assert found["failed"] and found["fail_fast"] is False and found["first_failure"]["rank_id"] == 3, found
    assert "fail-fast off, the other ranks ran to their end: 3 done" in found["msg"] and "stopped" not in found["msg"], found["msg"]


def test_each_rank_records_its_servers_clock_offset_and_its_times_line_up_in_the_controllers_clock(tmp_path):
    """b's clock "runs 0.4 s ahead" (one machine: b is told so): its gate, and so its ranks' own start times, read 0.4 s
    later than a's; less the offset each state.json records beside them, every rank started at the same moment."""
    a, b, _results = launch(tmp_path, free_port(), offsets={"b": 0.4})
    raw = {r: srv.raw(r) for srv in (a, b) for r in (x["rank_id"] for x in srv.ranks)}
    assert [raw[r]["clock_offset"] for r in range(4)] == [0.0, 0.0, 0.4, 0.4], raw
    assert min(raw[r]["started"] for r in (2, 3)) - max(raw[r]["started"] for r in (0, 1)) > 0.3  # each in its own clock
    states = {**a.states(), **b.states()}
    assert [states[r]["clock_offset"] for r in range(4)] == [0.0, 0.0, 0.4, 0.4]
    corrected = [t for t in (control.controller_time(states[r], "started") for r in range(4)) if t is not None]
    assert len(corrected) == 4 and max(corrected) - min(corrected) < 0.2, corrected  # generous for a loaded machine: 0.4 s uncorrected
    files.record_abort(str(a.job_dir), "test over")  # the group stops every rank
    wait_for(lambda: view(a)["status"] == group.ENDED, 30, "the group to end")


def test_a_killed_supervisor_leaves_nothing_running_and_its_server_is_lost(tmp_path):
    a, b, results = launch(tmp_path, free_port())
    pids = [b.raw(r)["pid"] for r in (2, 3)]
    os.kill(results["b"]["supervisor_pid"], signal.SIGKILL)
    wait_for(lambda: not any(alive(p) for p in pids), 10, "b's ranks to end without their supervisor")
    wait_for(lambda: all(b.raw(r).get("phase") == "exited" for r in (2, 3)), 10, "b's runners to record the end")  # just after
    assert all(b.raw(r)["stopped_by"].startswith("the supervisor of job j on this server (pid ") for r in (2, 3))
    wait_for(lambda: view(a)["status"] == group.ENDED, 30, "the group to end")
    final = view(a)
    assert final["cause"]["host"] == "b" and final["cause"]["lost"] == [2, 3] and final["members"]["b"]["state"] == "lost", final
    assert [r["state"] for r in final["ranks"]] == ["stopped", "stopped", "lost", "lost"]
    assert not any(alive(a.raw(r)["pid"]) for r in (0, 1))


def test_a_taken_group_port_fails_the_coordinators_stage_before_any_rank_starts(tmp_path):
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen(1)
        port = holder.getsockname()[1]
        a = Server(tmp_path, "a", [0, 1])
        control.record_job(str(a.jobs), {"job_id": "j", "run_dir": str(a.run), "ranks": a.ranks})
        args = stage_args(
            tmp_path, a, {"address": "127.0.0.1", "port": port, "host": "a", "coordinator": True, "hosts": ["a"]}, rank_size=2
        )
        result = run_module("training_ranks", args, timeout=60)
    assert result.get("failed") and f"cannot listen on 127.0.0.1 port {port} for the job's group" in result["msg"], result
    assert not (a.run / "device_0").exists()  # no runner was forked
    time.sleep(0.1)


def test_a_coordinator_that_crashes_says_so_in_group_json_and_leaves_its_traceback_in_the_job_directory(tmp_path, monkeypatch):
    """The coordinator's daemon, forked as the supervisor forks it: a crash of its loop is written to group.json as
    ``crashed`` with the error, and its stderr - the traceback - goes to coordinator.log in the job's directory (it went to
    /dev/null, and group.json stayed ``running``)."""

    class Crashing(group.Coordinator):
        def _tick(self, now: float) -> None:
            raise RuntimeError("boom in the coordinator's round")

    monkeypatch.setattr(group, "Coordinator", Crashing)  # the fork below runs this one
    jobs = tmp_path / "jobs"
    (jobs / "j").mkdir(parents=True)
    cfg = {"address": "127.0.0.1", "port": 0, "host": "a", "coordinator": True, "hosts": ["a"], "secret": SECRET, "lost_after": 1.5}
    params = {"job_id": "j", "job_root": str(jobs), "run_dir": str(tmp_path / "runs"), "ranks": [], "group": cfg, "gate_timeout": 60}
    from ansible_collections.ascend.cluster.plugins.module_utils._job_supervisor import Supervisor

    Supervisor(params, group.listen("127.0.0.1", 0)).start_coordinator()
    log = jobs / "j" / files.COORDINATOR_LOG
    wait_for(lambda: log.exists() and "RuntimeError: boom in the coordinator's round" in log.read_text(), 10, "the traceback in the log")
    assert "Traceback (most recent call last)" in log.read_text() and os.stat(log).st_mode & 0o777 == 0o600
    final = view_of(jobs / "j")
    assert final["status"] == group.CRASHED and final["error"] == "RuntimeError: boom in the coordinator's round", final
    assert final["log"] == str(log)


def view_of(job_dir: Path) -> dict:
    return json.loads((job_dir / files.GROUP_FILE).read_text())
