"""The job's group under attack (issue 34): no input to the coordinator's port stops the job or holds its loop.

A live coordinator (a thread) with three joined members, polled by a thread of their own (:class:`Pump`), which
notes the longest each went without a word from the coordinator: the job is untouched when no member was told to
stop, none went silent for its loss window (``lost_after``: the default 3 s, as on a cluster), and the coordinator's
loop still runs. The attacks: the issue's (a non-ASCII MAC, a deep JSON body, a newline then a stream of zero bytes,
fifteen 9 MiB lines at once), the single lines of ``tests/helpers/hostile.py``, and generated ones (hypothesis, a
short derandomised run; ``bench/bench_group_fuzz.py`` is the long one), from outside and from a connection joined with
one server's own key.
"""

from __future__ import annotations

import json
import socket
import threading
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ansible_collections.ascend.cluster.plugins.module_utils import _job_group as group
from tests.helpers import hostile
from tests.unit.plugins.module_utils.test_job_group import SECRET, Cluster

LOST_AFTER = group.LOST_AFTER_S  # the members' loss window, as on a cluster


class Pump(threading.Thread):
    """Polls the cluster's members until stopped; ``silence[host]``: the longest it saw that member go without a word
    from the coordinator once joined."""

    def __init__(self, cluster: Cluster) -> None:
        super().__init__(daemon=True)
        self.cluster = cluster
        self.silence: dict = dict.fromkeys(cluster.members, 0.0)
        self.halt = threading.Event()

    def run(self) -> None:
        while not self.halt.is_set():
            for host, member in self.cluster.members.items():
                member.poll(0.01)
                if member.state == "joined" and member.heard is not None:
                    self.silence[host] = max(self.silence[host], time.time() - member.heard)

    def stop(self) -> None:
        self.halt.set()
        self.join(10)


@pytest.fixture
def job(tmp_path):
    """Members a, b and x (three servers) joined to a coordinator that waits a long time for a gate nobody asks for."""
    c = Cluster(tmp_path, ["a", "b", "x"], join_timeout=3600, lost_after=LOST_AFTER)
    for host, ranks in (("a", [0, 1]), ("b", [2, 3]), ("x", [4, 5])):
        c.member(host, ranks)
    c.drive(10, until=lambda: c.joined("a", "b", "x"))
    assert c.joined("a", "b", "x")
    pump = Pump(c)
    pump.start()
    yield c, pump
    pump.stop()
    for member in c.members.values():
        member.close()
    c.coordinator.status = group.ENDED
    c.thread.join(5)


def untouched(c: Cluster, pump: Pump, hosts: tuple = ("a", "b", "x")) -> None:
    """The job as if nothing had happened: its loop runs, no stop, every member (of ``hosts``) joined and never silent
    for its window."""
    assert c.thread.is_alive(), "the coordinator's loop ended"
    assert c.coordinator.stop_reason is None and c.coordinator.cause is None, c.coordinator.cause
    assert all(not told for told in c.told.values()), c.told
    assert all(c.members[h].state == "joined" for h in hosts), {h: (m.state, m.error) for h, m in c.members.items()}
    assert max(pump.silence[h] for h in hosts) < LOST_AFTER, pump.silence
    assert all(c.coordinator.members[h]["state"] == "joined" for h in ("a", "b", "x"))


def test_the_issues_single_lines_close_their_own_connection_alone_and_are_counted(job):
    """A non-ASCII MAC (compare_digest raised TypeError) and a deep JSON body (json raised RecursionError before the MAC
    was checked) each killed the coordinator, and every rank stopped 3 s later. Now each line closes its connection
    within a second, is counted, and the job goes on."""
    c, pump = job
    for name, line in hostile.ADVERSARIAL.items():
        said, took, _sent = hostile.throw(c.port, line)
        assert said.startswith(b"challenge ") and said.count(b"\n") == 1 and took < 3.0, (name, said[:200], took)
    time.sleep(2 * group.HEARTBEAT_S)
    untouched(c, pump)
    # refused: each that made a line, or sent more than a connection may before joining (the others hung up first)
    refusals = sum(b"\n" in line or len(line) > group.MAX_UNJOINED_BYTES for line in hostile.ADVERSARIAL.values())
    view = c.view_once(lambda v: v["refused_connections"] >= refusals)
    assert (view["refused_connections"], view["connection_errors"]) == (refusals, 0), view


def test_a_newline_then_a_stream_of_zero_bytes_is_cut_off_at_once(job):
    """``x\\n`` then zero bytes: the read buffer grew without bound after the first newline and the loop stalled; both
    members lost the coordinator. Now the connection is cut after at most MAX_UNJOINED_BYTES, and heartbeats go on."""
    c, pump = job
    result = hostile.elsewhere(lambda: hostile.stream(c.port, b"x\n" + b"\0" * 65536, b"\0" * 65536, seconds=LOST_AFTER + 2))
    time.sleep(2 * group.HEARTBEAT_S)
    untouched(c, pump)
    assert result["cut_after_s"] is not None and result["cut_after_s"] < 1.0, result


def test_fifteen_parallel_9_mib_lines_do_not_hold_the_loop(job):
    """Six 9 MiB lines at once took 0.1-1.3 s each, one after the other; fifteen would pass the 3 s loss window."""
    c, pump = job
    line = b"7" * (9 * hostile.MIB) + b"\n"
    results = hostile.in_parallel([lambda: hostile.throw_elsewhere(c.port, line, wait=30) for _n in range(15)])
    time.sleep(2 * group.HEARTBEAT_S)
    untouched(c, pump)
    # each refused after its first bytes, not read through
    assert all(took < 5.0 and sent < len(line) for _said, took, sent in results), [(t, s) for _d, t, s in results]


def test_connections_beyond_the_waiting_limit_close_the_oldest_and_members_still_join(job, monkeypatch):
    """Hundreds of connections that never join: the oldest go once MAX_UNJOINED wait (the files stay bounded), and a
    member whose connection breaks joins again among them."""
    c, pump = job
    monkeypatch.setattr(group, "MAX_UNJOINED", 20)
    idle = [socket.create_connection(("127.0.0.1", c.port)) for _n in range(60)]
    try:
        time.sleep(0.5)
        waiting = [p for p in c.coordinator.peers.values() if p.host is None]
        assert len(waiting) <= 20, len(waiting)
        member = c.members["b"]
        assert member.channel is not None
        member.channel.sock.shutdown(socket.SHUT_RDWR)  # its link flaps: it must join again past the idle ones
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and c.coordinator.by_host.get("b") is None:
            time.sleep(0.05)
        time.sleep(2 * group.HEARTBEAT_S)
        untouched(c, pump)
    finally:
        for sock in idle:
            sock.close()


def test_a_servers_key_joins_as_that_server_and_as_no_other(job):
    """Each server holds only its own key (the secret stays on the coordinator's server): with x's key a connection joins
    as x, and claiming to be a it is refused - so training code on x cannot speak for a's ranks."""
    c, pump = job
    x_key = group.member_key(SECRET, "J", "x")
    assert x_key != SECRET and x_key != group.member_key(SECRET, "J", "a")
    refused = c.coordinator.refused
    with pytest.raises(ConnectionError, match="refused the join"):
        hostile.Insider(c.port, "J", "a", x_key)
    assert c.coordinator.refused == refused + 1 and c.coordinator.by_host["a"] is not None
    insider = hostile.Insider(c.port, "J", "x", x_key)  # as x it is x (it takes x's place, as a reconnecting member)
    insider.close()
    c.drive(5, until=lambda: c.members["x"].state == "joined" and c.coordinator.by_host.get("x") is not None, only=[])
    time.sleep(2 * group.HEARTBEAT_S)
    untouched(c, pump)


def test_generated_frames_from_outside_and_from_a_joined_server_leave_the_job_untouched(job):
    """The fuzz (a short, derandomised run of hypothesis): lines of any shape from connections that never joined, and
    sealed messages of any shape from one joined with x's own key; after each example the job is checked untouched."""
    c, pump = job
    frames = {"outside": 0, "inside": 0}

    @settings(max_examples=60, derandomize=True, database=None, deadline=None, suppress_health_check=list(HealthCheck))
    @given(st.lists(hostile.unjoined_frames(), min_size=1, max_size=4))
    def from_outside(lines: list) -> None:
        said, took, _sent = hostile.throw(c.port, b"".join(lines))
        frames["outside"] += len(lines)
        assert said.startswith(b"challenge ") and took < 3.0, ([line[:200] for line in lines], said[:200], took)
        untouched(c, pump)

    @settings(max_examples=40, derandomize=True, database=None, deadline=None, suppress_health_check=list(HealthCheck))
    @given(st.lists(hostile.sealed_bodies(), min_size=1, max_size=4))
    def from_inside(bodies: list) -> None:
        insider = hostile.Insider(c.port, "J", "x", group.member_key(SECRET, "J", "x"))
        try:
            for body in bodies:
                frames["inside"] += 1
                if not insider.send(body):
                    break
        finally:
            insider.close()
        untouched(c, pump, hosts=("a", "b"))  # x's own member was put out by the insider's join: it joins again

    from_outside()
    from_inside()
    c.drive(5, until=lambda: c.members["x"].state == "joined", only=[])
    time.sleep(2 * group.HEARTBEAT_S)
    untouched(c, pump)
    assert frames["outside"] >= 60 and frames["inside"] >= 40, frames
    view = json.loads((c.dir / "group.json").read_text())
    assert view["refused_connections"] > 0 and view["status"] == group.FORMING, view
