"""The job's group (module_utils/_job_group): its protocol over real sockets on loopback, case by case.

A coordinator runs in a thread of the test; members are polled from the test's own thread, as a supervisor's loop
polls its member. Nothing here needs more than 127.0.0.1.
"""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import threading
import time
from typing import Any, Callable

import pytest

from ansible_collections.ascend.cluster.plugins.module_utils import _job_files as files
from ansible_collections.ascend.cluster.plugins.module_utils import _job_group as group

SECRET = "the-jobs-secret"
# lost_after for these tests: short, yet a second above the group's least (two 0.5 s heartbeats), so that a heartbeat
# late on a loaded machine is not taken for a loss (0.6 s was: a test saw its coordinator "lost" after 0.63 s)
LOST = 1.5


class Cluster:
    """A coordinator (in a thread) and its members (polled by :meth:`drive`), with what each member was told."""

    def __init__(
        self, tmp_path, hosts: list, join_timeout: float = 20.0, offset: float = 0.0, lost_after: float = LOST, clock=time.time
    ) -> None:
        self.dir = tmp_path / "coordinator"
        self.dir.mkdir()
        self.listener = group.listen("127.0.0.1", 0)
        self.port = self.listener.getsockname()[1]
        self.lost_after = lost_after
        cfg = {
            "job_id": "J",
            "secret": SECRET,
            "hosts": hosts,
            "lost_after": lost_after,
            "join_timeout": join_timeout,
            "clock_offset": offset,
        }
        self.coordinator = group.Coordinator(cfg, str(self.dir), self.listener, clock=clock)
        self.crash: Exception | None = None  # what ended its loop, if anything did
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()
        self.tmp = tmp_path
        self.told: dict = {}
        self.members: dict = {}

    def serve(self) -> None:
        try:
            self.coordinator.run()
        except Exception as exc:  # pylint: disable=broad-except  # kept for the test (run() has written it to group.json)
            self.crash = exc

    def member(self, host: str, ranks: list, secret: str = SECRET, offset: float = 0.0, join_timeout: float = 20.0) -> group.Member:
        directory = self.tmp / host
        directory.mkdir(exist_ok=True)
        self.told[host] = []
        cfg = {
            "job_id": "J",
            "secret": group.member_key(secret, "J", host),  # what the controller gives a server other than the coordinator's
            "address": "127.0.0.1",
            "port": self.port,
            "host": host,
            "server": f"10.0.0.{len(self.members) + 1}",
            "lost_after": self.lost_after,
            "join_timeout": join_timeout,
            "clock_offset": offset,
        }
        told = self.told[host]
        member = group.Member(
            cfg,
            str(directory),
            [{"rank_id": r, "device_id": r % 8} for r in ranks],
            on_gate=lambda at: told.append(("gate", at)),
            on_stop=lambda reason: told.append(("stop", reason)),
        )
        self.members[host] = member
        return member

    def drive(self, seconds: float, until: Callable[[], bool] = lambda: False, only: list | None = None) -> float:
        """Poll the members (``only`` these) for at most ``seconds`` or until ``until()``; the seconds it took."""
        start = time.monotonic()
        while time.monotonic() - start < seconds and not until():
            for host, member in self.members.items():
                if only is None or host in only:
                    member.poll(0.01)
        return time.monotonic() - start

    def view(self) -> dict:
        return json.loads((self.dir / files.GROUP_FILE).read_text())

    def view_once(self, shows: Callable[[dict], bool], seconds: float = 3.0) -> dict:
        """The coordinator's view once it ``shows`` what the test waits for (its thread writes it when it gets to it:
        on a loaded machine, later than a fixed wait); the last one read when it never does."""
        seen: dict = {}

        def ready() -> bool:
            nonlocal seen
            try:
                seen = self.view()
            except (OSError, ValueError):
                return False
            return shows(seen)

        self.drive(seconds, until=ready)
        return seen

    def joined(self, *hosts: str) -> bool:
        return all(self.members[h].state == "joined" for h in hosts)


@pytest.fixture
def cluster(tmp_path):
    made: list = []

    def make(hosts: list, **kwargs: Any) -> Cluster:
        made.append(Cluster(tmp_path, hosts, **kwargs))
        return made[-1]

    yield make
    for each in made:
        for member in each.members.values():
            member.close()
        each.coordinator.status = group.ENDED  # its loop ends at the next step
        each.thread.join(5)


def test_the_gate_opens_by_itself_once_every_rank_of_every_server_is_staged_in_each_ones_clock(cluster):
    c = cluster(["a", "b"], offset=2.0)
    c.member("a", [0, 1], offset=-1.0)
    c.drive(2, until=lambda: c.joined("a"))
    c.members["a"].states({0: "staged", 1: "staged"})
    c.drive(0.5)
    assert c.told["a"] == []  # b has not joined: no gate yet
    c.member("b", [2, 3], offset=5.0)
    c.drive(2, until=lambda: c.joined("b"))
    c.members["b"].states({2: "staged", 3: "staging"})
    view = c.view_once(lambda v: v["members"].get("b", {}).get("unstaged") == [3])
    assert c.told["a"] == [] and view["members"]["b"]["unstaged"] == [3]  # rank 3 is still taking its lock
    staged = time.time()
    c.members["b"].states({3: "staged"})
    c.drive(3, until=lambda: bool(c.told["a"] and c.told["b"]))
    (kind_a, at_a), (kind_b, at_b) = c.told["a"][0], c.told["b"][0]
    assert kind_a == kind_b == "gate"
    # the coordinator's clock is 2 s ahead of the controller's: T (controller) = now - 2 + 0.5; each member adds its own
    assert at_b - at_a == pytest.approx(6.0)
    assert staged - 2.0 + 0.5 - 0.1 < at_a + 1.0 < staged - 2.0 + 0.5 + 1.0
    assert c.view()["status"] == group.RUNNING and c.view()["gate_at"] == pytest.approx(at_a + 1.0)
    assert group.gate_answer(c.view(), 30)["start_at"] == pytest.approx(at_a + 1.0)


def test_a_member_without_the_secret_is_refused_and_says_why(cluster):
    c = cluster(["a"])
    intruder = c.member("a", [0], secret="a guess", join_timeout=1.0)
    c.drive(2, until=lambda: intruder.state == "failed")
    assert intruder.state == "failed" and c.told["a"] == [("stop", intruder.error)]
    assert "could not join the job's group at 127.0.0.1" in intruder.error and "not this job's secret?" in intruder.error
    assert c.coordinator.members["a"]["state"] == "waiting" and c.coordinator.refused >= 1


def test_a_connection_that_says_nothing_does_not_keep_members_out(cluster, monkeypatch):
    monkeypatch.setattr(group, "HANDSHAKE_S", 0.3)
    c = cluster(["a"])
    silent = socket.create_connection(("127.0.0.1", c.port))
    try:
        c.member("a", [0])
        assert c.drive(3, until=lambda: c.joined("a")) < 3
        time.sleep(0.5)
        assert silent.recv(4096, socket.MSG_DONTWAIT) != b""  # it got the challenge ...
        silent.settimeout(2)
        while silent.recv(4096):  # ... and is closed once its time to join has passed
            pass
    finally:
        silent.close()
    assert c.coordinator.refused == 1


def test_a_forged_or_replayed_message_ends_the_connection(cluster):
    c = cluster(["a"])
    member = c.member("a", [0])
    c.drive(2, until=lambda: c.joined("a"))
    channel = member.channel
    assert channel is not None and channel.key is not None
    body = json.dumps({"t": "abort", "reason": "rank 0 failed (rc=1)"}, separators=(",", ":"), sort_keys=True)
    channel.outbuf += ("%s %s\n" % ("0" * 64, body)).encode()  # a MAC made without the key
    channel.flush()
    time.sleep(0.3)
    assert c.coordinator.stop_reason is None  # not believed
    assert member.channel is channel and channel.lines() == [] and channel.closed  # the coordinator hung up
    channel2 = socket.create_connection(("127.0.0.1", c.port))
    try:  # a sealed line of another connection, replayed: its key is not this connection's
        channel2.recv(4096)
        channel2.sendall(b"%s %s\n" % (b"f" * 64, body.encode()))
        channel2.settimeout(2)
        assert channel2.recv(4096) == b""
    finally:
        channel2.close()
    assert c.coordinator.stop_reason is None


def test_the_first_abort_reaches_every_member_at_once_and_is_the_jobs_cause(cluster):
    c = cluster(["a", "b", "c"])
    for host, ranks in (("a", [0, 1]), ("b", [2, 3]), ("c", [4, 5])):
        c.member(host, ranks)
    c.drive(3, until=lambda: c.joined("a", "b", "c"))
    failure = {"rank_id": 3, "device_id": 3, "rc": 1, "error": None, "log": "/r/device_3/train.log", "tail": ["boom"]}
    c.members["b"].abort("rank 3 failed (rc=1)", failure)
    took = c.drive(2, until=lambda: all(c.told[h] for h in "abc"))
    assert took < 0.5
    reason = "stopped by the job's group: rank 3 failed (rc=1) on 10.0.0.2"
    assert c.told == {"a": [("stop", reason)], "b": [("stop", reason)], "c": [("stop", reason)]}
    c.members["a"].abort("rank 0 failed (rc=2)", None)  # a later one changes nothing
    c.drive(0.3)
    assert c.coordinator.cause == dict(failure, host="b", server="10.0.0.2") and c.told["c"] == [("stop", reason)]


def test_a_silent_member_is_lost_its_ranks_named_and_the_others_stopped(cluster):
    c = cluster(["a", "b"])
    c.member("a", [0, 1])
    c.member("b", [8, 9])
    c.drive(3, until=lambda: c.joined("a", "b"))
    c.members["a"].states({0: "running", 1: "running"})
    c.members["b"].states({8: "running", 9: "running"})
    c.drive(0.7)
    went_silent = time.time()
    took = c.drive(3, until=lambda: bool(c.told["a"]), only=["a"])  # b says nothing more (its server died)
    assert took < LOST + 1.0  # its last heartbeat came up to HEARTBEAT_S before it went silent
    assert c.told["a"] == [("stop", f"stopped by the job's group: server 10.0.0.2 stopped answering (no heartbeat for {LOST:g} s)")]
    cause = c.coordinator.cause
    assert cause is not None and cause["lost"] == [8, 9] and cause["host"] == "b" and went_silent - 1.0 < cause["since"] < went_silent
    c.members["a"].finish([{"rank_id": 0, "state": "stopped"}, {"rank_id": 1, "state": "stopped"}])
    c.thread.join(3)
    final = c.view()
    assert final["status"] == group.ENDED and final["outcome"] == group.FAILED
    assert [(r["rank_id"], r["state"]) for r in final["ranks"]] == [(0, "stopped"), (1, "stopped"), (8, "lost"), (9, "lost")]
    assert final["ranks"][2]["device_id"] == 0 and final["counts"] == {"lost": 2, "stopped": 2}


def test_a_member_that_loses_the_coordinator_stops_its_ranks_and_says_so(cluster):
    c = cluster(["a"])
    member = c.member("a", [0])
    c.drive(3, until=lambda: c.joined("a"))
    c.coordinator.status = group.ENDED  # the coordinator's process is gone
    c.thread.join(3)
    took = c.drive(3, until=lambda: bool(c.told["a"]))
    assert LOST - 0.1 < took < LOST + 1.0 and member.state == "lost"
    assert c.told["a"][0][1].startswith("lost the job's coordinator at 127.0.0.1:")
    assert json.loads((c.tmp / "a" / files.MEMBER_FILE).read_text())["state"] == "lost"


def test_a_broken_connection_is_made_again_and_only_silence_counts(cluster):
    c = cluster(["a"])
    member = c.member("a", [0])
    c.drive(3, until=lambda: c.joined("a"))
    assert member.channel is not None
    member.channel.sock.shutdown(socket.SHUT_RDWR)  # a reset, as a flapping link gives
    c.drive(LOST * 2)
    assert member.state == "joined" and c.told["a"] == [] and c.coordinator.members["a"]["state"] == "joined"


def test_a_gate_kept_shut_names_the_servers_not_joined_and_the_ranks_not_staged(cluster):
    c = cluster(["a", "b", "c"], join_timeout=1.5)
    c.member("a", [0, 1])
    c.drive(2, until=lambda: c.joined("a"))
    c.members["a"].states({0: "staged", 1: "staging"})
    view = c.view_once(lambda v: v["members"].get("a", {}).get("unstaged") == [1])
    answer = group.gate_answer(view, 30)  # the controller's verdict after group_wait
    assert answer["failed"] and answer["missing"] == ["a", "b", "c"], answer
    assert answer["msg"].endswith(": a (ranks not staged: 1); b (not joined: waiting); c (not joined: waiting)"), answer
    c.drive(3, until=lambda: bool(c.told["a"]))  # the coordinator's own deadline (the gate time-out) stops the job
    assert (
        c.told["a"][0][0] == "stop"
        and "the gate was not opened within 1s of the launch: the job's group at 127.0.0.1:" in c.told["a"][0][1]
    )
    c.drive(2, until=lambda: c.view()["status"] != group.FORMING)
    assert c.coordinator.cause is not None and c.coordinator.cause["missing"] == ["a", "b", "c"]


def test_every_member_done_ends_the_group_done(cluster):
    c = cluster(["a", "b"])
    c.member("a", [0])
    c.member("b", [1])
    c.drive(3, until=lambda: c.joined("a", "b"))
    c.members["a"].finish([{"rank_id": 0, "state": "done", "rc": 0}])
    c.members["b"].finish([{"rank_id": 1, "state": "done", "rc": 0}])
    c.thread.join(3)
    final = c.view()
    assert not c.thread.is_alive() and final["outcome"] == group.DONE and final["cause"] is None
    assert [r["host"] for r in final["ranks"]] == ["a", "b"]
    with pytest.raises(OSError):  # the coordinator's port is free again
        socket.create_connection(("127.0.0.1", c.port), timeout=1)


def test_listen_binds_the_given_address_only_and_says_what_to_fix():
    sock = group.listen("127.0.0.1", 0)
    try:
        assert sock.getsockname()[0] == "127.0.0.1"
        with pytest.raises(group.GroupError, match=r"another process listens on it .* or set ascend_launch_group_port"):
            group.listen("127.0.0.1", sock.getsockname()[1])
    finally:
        sock.close()
    with pytest.raises(group.GroupError, match="it is not an address of this server"):
        group.listen("198.18.255.254", 29700)
    with pytest.raises(group.GroupError, match="is not an IP address"):
        group.listen("server0", 29700)


def test_the_secret_is_written_mode_0600(tmp_path):
    path = files.write_secret(str(tmp_path), "s3")
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600 and open(path).read() == "s3"


def test_the_gate_wait_on_real_files(tmp_path):
    """The gate's wait on the coordinator's server (one shell line): the view once the gate opened, else after the wait."""
    job = tmp_path / "J"
    job.mkdir()
    (job / files.JOB_FILE).write_text("{}")
    files.write_json(str(job / files.GROUP_FILE), {"status": group.RUNNING, "gate_at": 5.0})
    out = subprocess.run(["sh", "-c", group.gate_wait_command(str(job), 1)], capture_output=True, text=True, check=False).stdout
    ran, text = files.parse_read(out)
    assert ran and json.loads(text)["gate_at"] == 5.0 and group.gate_answer(json.loads(text), 30)["start_at"] == 5.0
    files.write_json(str(job / files.GROUP_FILE), {"status": group.FORMING, "members": {}})
    began = time.monotonic()
    out = subprocess.run(["sh", "-c", group.gate_wait_command(str(job), 0.3)], capture_output=True, text=True, check=False).stdout
    assert 0.25 < time.monotonic() - began < 3 and json.loads(files.parse_read(out)[1])["status"] == group.FORMING  # waited, then said


# -- the group's own liveness (issue 34)


def test_group_json_is_rewritten_every_heartbeat_round_with_progress_and_refusals(cluster):
    """Its ``updated`` is a liveness signal: rewritten every round though nothing changed; rank 0's line and the refused
    connections are current (they read "step 1" and 0 after 514 refusals before)."""
    c = cluster(["a"])
    c.member("a", [0])
    c.drive(3, until=lambda: c.joined("a"))
    first = c.view_once(lambda v: v["members"]["a"]["state"] == "joined")
    later = c.view_once(lambda v: v["updated"] >= first["updated"] + group.HEARTBEAT_S)
    assert later["updated"] >= first["updated"] + group.HEARTBEAT_S, (first["updated"], later["updated"])
    c.members["a"].progress_line("step 7 loss 0.25")
    c.drive(1.5 * group.HEARTBEAT_S)  # sent with the next heartbeat
    for _n in range(3):
        with socket.create_connection(("127.0.0.1", c.port)) as sock:
            sock.sendall(b"not a join\n")
            sock.settimeout(2)
            while sock.recv(4096):
                pass
    view = c.view_once(lambda v: v["rank0_line"] == "step 7 loss 0.25" and v["refused_connections"] == 3)
    assert (view["rank0_line"], view["refused_connections"]) == ("step 7 loss 0.25", 3), view


def test_a_coordinator_crash_is_written_to_group_json_and_its_members_told_at_once(cluster):
    """An exception that ends its loop: group.json says ``crashed`` with the error (it stayed ``running`` before), every
    member is told to stop at once, and status / diagnose name it (``_job_group.health``)."""
    c = cluster(["a", "b"])
    c.member("a", [0])
    c.member("b", [1])
    c.drive(3, until=lambda: c.joined("a", "b"))

    def broken(now: float) -> None:
        raise RuntimeError("a bug in the coordinator")

    c.coordinator._gate = broken  # its next round's look at the gate
    took = c.drive(3, until=lambda: bool(c.told["a"] and c.told["b"]))
    c.thread.join(3)
    assert took < 1.0 and not c.thread.is_alive() and isinstance(c.crash, RuntimeError)
    reason = c.told["a"][0][1]
    assert reason.startswith("stopped by the job's group: the job's coordinator at 127.0.0.1:") and reason.endswith(
        "crashed: RuntimeError: a bug in the coordinator"
    ), reason
    view = c.view()
    assert view["status"] == group.CRASHED and view["error"] == "RuntimeError: a bug in the coordinator", view
    assert view["log"] == str(c.dir / files.COORDINATOR_LOG) and view["cause"]["rank_id"] == -1
    problem = group.health(str(c.dir))["problem"]
    assert problem.startswith("the job's coordinator at 127.0.0.1:") and "crashed at " in problem, problem
    assert problem.endswith(": RuntimeError: a bug in the coordinator (its log: %s)" % (c.dir / files.COORDINATOR_LOG)), problem


def cut_off_verdict(c: Cluster) -> dict:
    """The watch's verdict of the group once it ended (every member cut off), and what a restart would blame."""
    c.thread.join(5)
    final = c.view()
    assert final["status"] == group.ENDED, final
    return final


def test_every_member_silent_at_once_is_the_coordinators_loss_not_a_servers(cluster):
    """Every member falls silent together (the coordinator's network, or its process): no server is blamed - before, the
    first one checked was "lost" and a restart with max_restarts would have left that healthy server out."""
    from ansible_collections.ascend.cluster.plugins.plugin_utils import _restart as restart
    from ansible_collections.ascend.cluster.plugins.plugin_utils import _watch as watch

    c = cluster(["a", "b"])
    c.member("a", [0, 1])
    c.member("b", [2, 3])
    c.drive(3, until=lambda: c.joined("a", "b"))
    c.drive(LOST + 2, until=lambda: c.coordinator.stop_reason is not None, only=[])  # neither is heard any more
    cause = c.coordinator.cause
    assert cause is not None and cause["coordinator"] is None and cause["server"] is None and cause["rank_id"] == -1, cause
    assert "heard none of 10.0.0.1, 10.0.0.2 for 1.5 s, all at once: its own process, server or network" in cause["error"]
    assert [m["state"] for m in c.coordinator.members.values()] == [group.CUT_OFF, group.CUT_OFF]
    found = watch.verdict("J", cut_off_verdict(c))
    assert found["failed"] and found["coordinator_lost"] and found["lost_hosts"] == [], found
    assert restart.at_fault(found, None) == []
    summary = {"failure": found["first_failure"], "message": found["msg"]}
    assert restart.decide(summary, found, None, [], 1)["why"] == "restart 1 of 1: on the same servers"


def test_a_stalled_coordinator_blames_itself_and_no_server(cluster):
    """Its loop held for longer than the loss window: both members lose it and stop; when it runs again it finds them
    silent - the silence is its own (before: "server ... stopped answering", a healthy server blamed)."""
    c = cluster(["a", "b"])
    c.member("a", [0, 1])
    c.member("b", [2, 3])
    c.drive(3, until=lambda: c.joined("a", "b"))
    step = c.coordinator.step
    held: list = []

    def stalled(timeout: float) -> None:
        if not held:
            held.append(time.monotonic())
            time.sleep(LOST + 1.0)  # what a SIGSTOP, a swapped-out process or a hostile read did
        step(timeout)

    c.coordinator.step = stalled
    c.drive(LOST + 1.5, until=lambda: bool(c.told["a"] and c.told["b"]))
    assert all(told[0][1].startswith("lost the job's coordinator") for told in c.told.values()), c.told
    c.drive(LOST + 2, until=lambda: c.coordinator.cause is not None, only=[])
    cause = c.coordinator.cause
    assert cause is not None and cause["server"] is None and "did not run for " in cause["error"], cause
    assert "(stalled), and 10.0.0.1, 10.0.0.2 lost it" in cause["error"], cause
    assert all(m["state"] == group.CUT_OFF for m in c.coordinator.members.values())


def test_one_member_lost_during_the_coordinators_stall_is_cut_off_not_lost(tmp_path):
    """A one-server job (one member): the coordinator's clock jumps past the loss window between two of its rounds (it
    did not run) and its member is heard no more - cut off by the coordinator's stall, not lost."""
    jump = [0.0]
    c = Cluster(tmp_path, ["a"], clock=lambda: time.time() + jump[0])
    try:
        c.member("a", [0])
        c.drive(3, until=lambda: c.joined("a"))
        jump[0] = LOST + 1.0
        c.drive(LOST + 2, until=lambda: c.coordinator.cause is not None, only=[])
        cause = c.coordinator.cause
        assert c.coordinator.members["a"]["state"] == group.CUT_OFF, c.coordinator.members
        assert cause is not None and "did not run for " in cause["error"], cause
    finally:
        c.members["a"].close()
        c.coordinator.status = group.ENDED
        c.thread.join(5)


def test_health_names_a_coordinator_that_stopped_rewriting_group_json_and_a_member_that_lost_it(tmp_path):
    """status and diagnose on each server (``training_job``'s ``group_health``): the coordinator's server says when its
    group.json was last rewritten and whether its process still runs; a member's server, that it lost the coordinator."""
    job = tmp_path / "J"
    job.mkdir()
    now = time.time()
    files.write_json(
        str(job / files.GROUP_FILE), {"status": group.RUNNING, "endpoint": "10.0.0.1:29700", "updated": now - 10, "pid": 2**22 + 7}
    )
    found = group.health(str(job), now)
    assert found["coordinator"] == group.RUNNING and found["member"] is None
    assert found["problem"].startswith("the job's coordinator at 10.0.0.1:29700 has not rewritten its group.json since ")
    assert found["problem"].endswith("(10 s ago; its process 4194311 is gone)"), found
    files.write_json(str(job / files.GROUP_FILE), {"status": group.RUNNING, "endpoint": "10.0.0.1:29700", "updated": now - 1})
    assert group.health(str(job), now)["problem"] is None  # rewritten a second ago: alive
    os.unlink(job / files.GROUP_FILE)
    error = "lost the job's coordinator at 10.0.0.1:29700: no word from it for 3.0 s"
    files.write_json(str(job / files.MEMBER_FILE), {"state": "lost", "error": error, "updated": now})
    assert group.health(str(job), now) == {
        "coordinator": None,
        "member": "lost",
        "problem": "%s (at %s)" % (error, time.strftime("%H:%M:%S", time.localtime(now))),
    }
