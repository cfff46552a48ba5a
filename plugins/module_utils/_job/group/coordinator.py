# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The coordinator, on rank 0's server: it admits the members, opens the gate, hears and judges them, and stops them all.

Runs on target hosts: Python 3.8+, stdlib only.
"""

from __future__ import annotations

import hmac
import os
import secrets
import selectors
import socket
import time
import traceback

from ansible_collections.ascend.cluster.plugins.module_utils._job import files
from ansible_collections.ascend.cluster.plugins.module_utils._job.control import fail_fast
from ansible_collections.ascend.cluster.plugins.module_utils._job.group.channel import Channel
from ansible_collections.ascend.cluster.plugins.module_utils._job.group.protocol import (
    ACCEPT_AT_ONCE,
    CRASH_FLUSH_S,
    CRASHED,
    CUT_OFF,
    DONE,
    ENDED,
    ERROR_CHARS,
    FAILED,
    FIELD_CHARS,
    FORMING,
    HANDSHAKE_S,
    HEARTBEAT_S,
    MAX_UNJOINED,
    RUNNING,
    STATE_CHARS,
    STOPPED,
    STOPPING,
    WRITE_EVERY_S,
    BadMessage,
    Side,
    challenge_line,
    member_key,
    own_rank,
    parse_body,
    read_join,
    seal,
    session_key,
    valid_failure,
    valid_pairs,
)
from ansible_collections.ascend.cluster.plugins.module_utils._job.group.view import not_started


class _Peer:
    """One connection at the coordinator, and the member it became once joined."""

    def __init__(self, channel: Channel, nonce: str, now: float) -> None:
        self.channel = channel
        self.nonce = nonce
        self.opened = now
        self.host: str | None = None  # set once joined


class Coordinator(Side):
    """The job's coordinator: accepts members, relays the first stop to every member, opens the gate, ends the job.

    ``cfg``: ``job_id``, ``secret``, ``hosts`` (the inventory names of every member it waits for), ``lost_after``,
    ``join_timeout`` (how long to wait for members before the gate is asked for), ``clock_offset`` (this server's
    clock minus the controller's, as the pre-flight measured it), ``servers`` (optional: host -> address, for
    messages), ``gate_margin`` (seconds from the moment every rank is staged to the common start), ``fail_fast`` (the
    job's, ``_job.control.fail_fast``: shown in ``group.json`` for the watch and the report; the members' runners act on
    it). ``job_dir``: the job's directory on this server (``group.json``).
    """

    def __init__(self, cfg: dict, job_dir: str, listener: socket.socket, clock=time.time) -> None:
        super().__init__(cfg, job_dir, clock)
        self.listener = listener
        self.expected = [str(h) for h in cfg["hosts"]]
        self.members: dict = dict(
            (h, {"host": h, "server": (cfg.get("servers") or {}).get(h, h), "state": "waiting", "ranks": {}}) for h in self.expected
        )
        self.peers: dict = {}  # fd -> _Peer
        self.by_host: dict = {}  # host -> _Peer (the joined connection)
        self.status = FORMING
        self.cause: dict | None = None
        self.stop_reason: str | None = None
        self.stopped_at = 0.0
        self.gate_at: float | None = None
        self.margin = float(cfg["gate_margin"]) if cfg.get("gate_margin") is not None else 0.5
        self.rank0_line = ""
        self.fail_fast = fail_fast(cfg)
        self.refused = 0  # connections closed for a bad handshake or MAC, or before they joined
        self.errors = 0  # connections closed for an error while their input was handled (``connection_errors``)
        self.last_error = ""  # the last such error, for group.json
        self.keys: dict = {}  # host -> its member key
        self.crash: dict | None = None  # {"error", "at", "log"} once the loop ended by an exception
        self.dirty = True
        self.last_write = 0.0
        self.last_hb = 0.0
        self.last_tick = self.started  # when the loop last looked at the members (a longer gap: it did not run)
        self.stalled = 0.0  # the longest the loop did not run (over half of lost_after), and when it ran again
        self.stalled_at: float | None = None
        self.selector = selectors.DefaultSelector()
        listener.setblocking(False)
        self.selector.register(listener, selectors.EVENT_READ, None)

    # -- the loop

    def run(self) -> dict:
        """Serve until every member has left or was lost; the final group.json's content. An exception that ends the
        loop is written to group.json (:meth:`crashed`), then raised."""
        try:
            while self.status != ENDED:
                self.step(0.05)
        except Exception as exc:
            self.crashed(exc)
            raise
        finally:
            self.close()
        return self.snapshot(final=True)

    def crashed(self, exc: BaseException) -> None:
        """The loop ended by ``exc``: every member is told to stop (it would lose this coordinator ``lost_after`` later
        anyway) and group.json says :data:`CRASHED`, with the error and where the coordinator's stderr went."""
        error = "".join(traceback.format_exception_only(type(exc), exc)).strip()[-ERROR_CHARS:]
        self.crash = {"error": error, "at": self.clock(), "log": os.path.join(self.job_dir, files.COORDINATOR_LOG)}
        why = "the job's coordinator at %s crashed: %s" % (self.endpoint(), error)
        if self.cause is None:
            self.cause = {"host": None, "server": None, "rank_id": -1, "coordinator": self.cfg.get("host"), "error": why}
        try:
            if self.stop_reason is None:
                self.stop_reason = "stopped by the job's group: %s" % why
                self.stopped_at = self.clock()
                for peer in list(self.by_host.values()):
                    peer.channel.send({"t": "stop", "reason": self.stop_reason})
            deadline = time.monotonic() + CRASH_FLUSH_S
            while time.monotonic() < deadline and any(p.channel.outbuf and not p.channel.closed for p in self.by_host.values()):
                time.sleep(0.01)
                for peer in list(self.by_host.values()):
                    peer.channel.flush()
        except Exception:  # pylint: disable=broad-except  # telling the members is a courtesy: group.json must be written
            pass
        self.status = CRASHED
        try:
            self.write(self.clock())
        except Exception:  # pylint: disable=broad-except  # nothing else can say it: the log has the traceback
            pass

    def step(self, timeout: float) -> None:
        for key, events in self.selector.select(timeout):
            if key.data is None:
                self._accept()
            else:
                peer = key.data
                if events & selectors.EVENT_READ:
                    self._read(peer)
                if events & selectors.EVENT_WRITE and not peer.channel.closed:
                    peer.channel.flush()
                self._watch_writes(peer)
        self._tick(self.clock())

    def close(self) -> None:
        for peer in list(self.peers.values()):
            peer.channel.flush()
            peer.channel.close()
        self.peers.clear()
        try:
            self.selector.unregister(self.listener)
        except (KeyError, ValueError):
            pass
        self.listener.close()
        self.selector.close()

    def _accept(self) -> None:
        """Accept up to :data:`ACCEPT_AT_ONCE` connections and challenge each; beyond :data:`MAX_UNJOINED` waiting to
        join, the oldest is closed (refused)."""
        for _turn in range(ACCEPT_AT_ONCE):
            try:
                sock, _where = self.listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError:  # out of files, or the connection reset before it was taken: the oldest waiting one goes
                self._evict()
                return
            waiting = [p for p in self.peers.values() if p.host is None]
            if len(waiting) >= MAX_UNJOINED:
                self._evict()
            channel = Channel(sock, "c")
            nonce = secrets.token_hex(16)
            peer = _Peer(channel, nonce, self.clock())
            self.peers[channel.fileno()] = peer
            self.selector.register(sock, selectors.EVENT_READ, peer)
            channel.send_raw(challenge_line(nonce, self.job_id))
            self._watch_writes(peer)

    def _evict(self) -> None:
        """Close the connection that has waited longest to join (refused)."""
        waiting = sorted((p for p in self.peers.values() if p.host is None), key=lambda p: p.opened)
        if waiting:
            self.refused += 1
            self.dirty = True
            self._drop(waiting[0])

    def _watch_writes(self, peer: _Peer) -> None:
        if peer.channel.closed:
            self._drop(peer)
            return
        want = selectors.EVENT_READ | (selectors.EVENT_WRITE if peer.channel.outbuf else 0)
        try:
            self.selector.modify(peer.channel.sock, want, peer)
        except (KeyError, ValueError, OSError):
            pass

    def _drop(self, peer: _Peer) -> None:
        fd = None
        for key, value in list(self.peers.items()):
            if value is peer:
                fd = key
        if fd is not None:
            del self.peers[fd]
        try:
            self.selector.unregister(peer.channel.sock)
        except (KeyError, ValueError, OSError):
            pass
        peer.channel.close()
        if peer.host is not None and self.by_host.get(peer.host) is peer:
            del self.by_host[peer.host]

    def _read(self, peer: _Peer) -> None:
        """One read of ``peer``'s connection and the lines it completed; a line that is not the job's closes the
        connection (counted as refused before it joined), and so does any error while it is handled (counted)."""
        joined = peer.host is not None
        try:
            for line in peer.channel.lines():
                if peer.host is None:
                    self._join(peer, line)
                else:
                    self._hear(peer, peer.channel.open(line))
                if peer.channel.closed:
                    break
        except BadMessage:
            self.refused += int(not joined)
            peer.channel.close()
        except Exception as exc:  # pylint: disable=broad-except  # one connection's input never ends the loop
            self.errors += 1
            self.last_error = ("%s: %s" % (type(exc).__name__, exc))[:ERROR_CHARS]
            peer.channel.close()
        if peer.channel.closed:
            if not joined and peer.channel.why:  # over its bytes before joining, or an over-long line
                self.refused += 1
            self.dirty = True
            self._drop(peer)

    def _key(self, host: str) -> str:
        if host not in self.keys:
            self.keys[host] = member_key(self.secret, self.job_id, host)
        return self.keys[host]

    def _join(self, peer: _Peer, line: bytes) -> None:
        """The first line of a connection: a member's join, checked before any of it is read as JSON - its shape, its
        host one of the job's, its MAC with that host's key; then its JSON."""
        mac, host, nonce, rest, body = read_join(line)
        if host not in self.members:
            raise BadMessage("not a member of this job")
        key = session_key(self._key(host), self.job_id, peer.nonce, nonce)
        if not hmac.compare_digest(mac, seal(key, "m", 1, rest)):
            raise BadMessage("bad MAC")
        message = parse_body(body)
        peer.channel.key = key
        peer.channel.seq_in = 1
        old = self.by_host.get(host)
        if old is not None and old is not peer:  # the member connects again (its connection broke): the new one counts
            self._drop(old)
        peer.host = host
        self.by_host[host] = peer
        member = self.members[host]
        now = self.clock()
        member.update(
            server=str(message.get("server") or member["server"])[:255],
            pid=message.get("pid") if isinstance(message.get("pid"), int) else None,
            heard=now,
            ranks=member["ranks"] or dict((str(r[0]), "pending") for r in valid_pairs(message.get("ranks"))),
            devices=dict((str(r[0]), r[1]) for r in valid_pairs(message.get("ranks"))),
        )
        if member["state"] != "done":  # a member found lost that speaks again counts again (its final states are wanted)
            member["state"] = "joined"
            member.setdefault("joined_at", now)
        self.dirty = True
        peer.channel.send({"t": "welcome", "job": self.job_id, "status": self.status})
        if self.gate_at is not None:
            peer.channel.send({"t": "gate", "start_at": self.gate_at})
        if self.stop_reason is not None:
            peer.channel.send({"t": "stop", "reason": self.stop_reason})

    def _hear(self, peer: _Peer, message: dict) -> None:
        member = self.members[peer.host]
        member["heard"] = self.clock()
        kind = message["t"]
        if isinstance(message.get("states"), dict):  # its own ranks' states only (a member's key is its server's alone)
            member["ranks"].update(
                (k, v) for k, v in message["states"].items() if k in member["ranks"] and isinstance(v, str) and len(v) <= STATE_CHARS
            )
            self.dirty = True
        if isinstance(message.get("line"), str) and "0" in member["ranks"]:
            self.rank0_line = message["line"][-300:]
            self.dirty = True
        if kind == "abort":
            self._stop_for(member, str(message.get("reason") or "stopped")[:FIELD_CHARS], valid_failure(message.get("failure")))
        elif kind == "done":
            given = message.get("ranks")
            ranks = [r for r in given if own_rank(r, member)] if isinstance(given, list) else []
            member.update(state="done", final=ranks, left_at=self.clock())
            member["ranks"] = dict((str(r["rank_id"]), r["state"]) for r in ranks)
            self.dirty = True
            peer.channel.flush()
            self._drop(peer)

    # -- decisions

    def _stop_for(self, member: dict | None, reason: str, failure: object = None, cause: dict | None = None) -> None:
        """The first stop wins: its cause (``cause``, else made from ``reason`` and ``failure``) is the job's; every
        member is told to stop its ranks."""
        if self.stop_reason is not None:
            return
        where = " on %s" % member["server"] if member else ""
        self.cause = cause if cause is not None else self._cause(member, reason, failure)
        self.stop_reason = "stopped by the job's group: %s%s" % (reason, where)
        self.stopped_at = self.clock()
        self.status = STOPPING
        self.dirty = True
        for peer in list(self.by_host.values()):
            peer.channel.send({"t": "stop", "reason": self.stop_reason})
            self._watch_writes(peer)

    @staticmethod
    def _cause(member: dict | None, reason: str, failure: object) -> dict:
        host = member["host"] if member else None
        server = member["server"] if member else None
        if isinstance(failure, dict):
            return dict(failure, host=host, server=server)
        found = files.parse_abort_line(reason)
        if found["rank_id"] is not None:  # a failed line without details (a member that could not read them)
            return {"host": host, "server": server, "rank_id": found["rank_id"], "rc": found["rc"], "error": found["why"], "device_id": -1}
        return {"host": host, "server": server, "rank_id": -1, "stopped_by": reason}

    def _tick(self, now: float) -> None:
        for peer in [p for p in self.peers.values() if p.host is None and now - p.opened > HANDSHAKE_S]:
            self.refused += 1
            self.dirty = True
            self._drop(peer)
        self._judge_silence(now)
        if self.gate_at is None and self.stop_reason is None:
            self._gate(now)
        if self.gate_at is None and self.stop_reason is None and now > self.join_deadline:
            self._refuse_start("the gate was not opened within %ds of the launch" % (self.join_deadline - self.started))
        if self.stop_reason is not None and now - self.stopped_at > self.lost_after:
            for member in self.members.values():
                if member["state"] == "waiting":  # never joined, and the job is over: nothing of theirs to stop through the group
                    member["state"] = "missing"
                    self.dirty = True
        if all(m["state"] in ("done", "lost", "missing", CUT_OFF) for m in self.members.values()):
            self.status = ENDED
            self.dirty = True
        if now - self.last_hb >= HEARTBEAT_S:
            self.last_hb = now
            self.dirty = True  # group.json every round: its ``updated`` says the coordinator is alive
            for peer in list(self.by_host.values()):
                if not peer.channel.outbuf:
                    peer.channel.send({"t": "hb"})
                self._watch_writes(peer)
        if self.dirty and (now - self.last_write >= WRITE_EVERY_S or self.status in (STOPPING, ENDED)):
            self.write(now)

    def _judge_silence(self, now: float) -> None:
        """Lose the joined members silent for ``lost_after`` - unless the silence is the coordinator's own. Its loop did
        not run for half that time (it was stalled: it heard nothing, whatever the members said): every member gets a
        new window from then, and one silent since is cut off (it lost the coordinator during the stall). Or, with two
        or more members, every one of them has missed two heartbeats by the time the first is lost: they fell silent
        together - the coordinator's process, server or network. Then no server is blamed (:meth:`_cut_off`)."""
        gap, self.last_tick = now - self.last_tick, now
        joined = [m for m in self.members.values() if m["state"] == "joined"]
        if gap > self.lost_after / 2:
            self.stalled, self.stalled_at = gap, now
            for member in joined:
                member["heard"] = max(member.get("heard", now), now)
            return
        silent = [m for m in joined if now - m.get("heard", now) > self.lost_after]
        if not silent:
            return
        # the others missed two heartbeats too by the time the first is lost: they fell silent with it (a healthy member
        # is heard every heartbeat, a busy one within two)
        together = [m for m in joined if now - m.get("heard", now) > 2 * HEARTBEAT_S]
        if len(joined) > 1 and len(together) == len(joined):
            self._cut_off(joined, now)
            return
        since_stall = [m for m in silent if self.stalled_at is not None and m["heard"] <= self.stalled_at]
        if since_stall:
            self._cut_off(since_stall, now)
        for member in silent:
            if member not in since_stall:
                self._lose(member, member["heard"])

    def _refuse_start(self, why: str) -> None:
        """The job cannot start: stop every member that joined (their runners wait at the gate), naming what kept the
        gate shut (servers not joined, ranks not staged)."""
        shut = not_started(self.snapshot())
        missing = sorted(item.split(" ", 1)[0] for item in shut)
        if shut:
            why = "%s: the job's group at %s: %s" % (why, self.endpoint(), "; ".join(shut))
        self._stop_for(None, why, cause={"host": None, "server": None, "rank_id": -1, "error": why, "missing": missing})

    def _cut_off(self, members: list, now: float) -> None:
        """``members`` fell silent through the coordinator's fault (:meth:`_judge_silence`): each is :data:`CUT_OFF` (not
        lost: no server is blamed, and a restart leaves none out); the job stops with the coordinator as its cause."""
        since = max(m["heard"] for m in members)
        for member in members:
            member.update(state=CUT_OFF, lost_at=now)
            peer = self.by_host.get(member["host"])
            if peer is not None:
                self._drop(peer)
        self.dirty = True
        if self.stop_reason is None:
            servers = ", ".join(sorted(str(m["server"]) for m in members))
            if self.stalled_at is not None and since <= self.stalled_at:
                why = "the job's coordinator at %s did not run for %.1f s (stalled), and %s lost it" % (
                    self.endpoint(),
                    self.stalled,
                    servers,
                )
            else:
                why = "the job's coordinator at %s heard none of %s for %g s, all at once: its own process, server or network" % (
                    self.endpoint(),
                    servers,
                    self.lost_after,
                )
            cause = {"host": None, "server": None, "rank_id": -1, "coordinator": self.cfg.get("host"), "since": since, "error": why}
            self._stop_for(None, why, cause=cause)

    def _lose(self, member: dict, since: float) -> None:
        member.update(state="lost", lost_at=self.clock())
        peer = self.by_host.get(member["host"])
        if peer is not None:
            self._drop(peer)
        ranks = sorted(int(r) for r, s in member["ranks"].items() if s not in ("done", "failed", "stopped"))
        self.dirty = True
        if self.stop_reason is None:
            silent = "stopped answering (no heartbeat for %g s)" % self.lost_after
            cause = {"host": member["host"], "server": member["server"], "rank_id": -1, "lost": ranks, "since": since, "error": silent}
            self._stop_for(None, "server %s %s" % (member["server"], silent), cause=cause)

    def _gate(self, now: float) -> None:
        """Open the gate once every member has joined and reported every rank staged: ``gate_margin`` seconds from now,
        in the controller's clock (each member adds its own offset to it)."""
        for member in self.members.values():
            if member["state"] != "joined" or any(state != "staged" for state in member["ranks"].values()) or not member["ranks"]:
                return
        self.gate_at = now - self.offset + self.margin
        self.status = RUNNING
        self.write(now)  # first: a member told of the gate finds group.json already saying so
        for peer in list(self.by_host.values()):
            peer.channel.send({"t": "gate", "start_at": self.gate_at})
            self._watch_writes(peer)

    def endpoint(self) -> str:
        try:
            where = self.listener.getsockname()
            return "%s:%d" % (where[0], where[1])
        except OSError:
            return "?"

    # -- what the controller reads

    def snapshot(self, final: bool = False) -> dict:
        status = ENDED if final else self.status
        ranks = self.final_ranks() if status == ENDED else None
        counts: dict = {}
        for state in [r["state"] for r in ranks] if ranks is not None else [s for m in self.members.values() for s in m["ranks"].values()]:
            counts[state] = counts.get(state, 0) + 1
        data = {
            "job_id": self.job_id,
            "endpoint": self.endpoint(),
            "pid": os.getpid(),
            "status": status,
            "gate_at": self.gate_at,
            "cause": self.cause,
            "stop_reason": self.stop_reason,
            "stopped_at": self.stopped_at or None,
            "fail_fast": self.fail_fast,
            "counts": counts,
            "rank0_line": self.rank0_line,
            "refused_connections": self.refused,
            "connection_errors": self.errors,
            "last_connection_error": self.last_error,
            "host": self.cfg.get("host"),
            "lost_after": self.lost_after,
            "updated": self.clock(),
            "members": dict((h, self._member_view(m, status)) for h, m in sorted(self.members.items())),
        }
        if ranks is not None:
            data["outcome"] = self.outcome()
            data["ranks"] = ranks
        if self.crash is not None:
            data.update(status=CRASHED, error=self.crash["error"], crashed_at=self.crash["at"], log=self.crash["log"])
        return data

    @staticmethod
    def _member_view(member: dict, status: str) -> dict:
        """A member as group.json shows it; while the group forms, with the ranks that keep the gate shut (``unstaged``);
        once it left, before the job ended, with its ranks' last states (``rank_states``: a stop while the job stages is
        confirmed server by server, ``plugin_utils/_launch/staging``)."""
        view = dict((k, v) for k, v in member.items() if k not in ("ranks", "final", "devices"))
        if member["state"] == "done" and status != ENDED:  # how its ranks ended, before the job's final list has them all
            view["rank_states"] = dict(member["ranks"])
        if status == FORMING:
            view["unstaged"] = sorted(int(r) for r, state in member["ranks"].items() if state != "staged")
        return view

    def outcome(self) -> str:
        if self.cause is None and all(m["state"] == "done" for m in self.members.values()):
            if all(s == "done" for m in self.members.values() for s in m["ranks"].values()):
                return DONE
        if self.cause is not None and self.cause.get("stopped_by") is not None:
            return STOPPED
        return FAILED

    def final_ranks(self) -> list:
        """Every rank's last known state, with its host and server; ranks of a lost member are ``lost``."""
        ranks: list = []
        for member in self.members.values():
            final = member.get("final")
            if final:
                ranks.extend(dict(r, host=member["host"], server=member["server"]) for r in final if isinstance(r, dict))
                continue
            for rank, state in sorted(member["ranks"].items(), key=lambda item: int(item[0])):
                lost = member["state"] in ("lost", "missing", CUT_OFF) and state not in ("done", "failed", "stopped")
                ranks.append(
                    {
                        "rank_id": int(rank),
                        "device_id": (member.get("devices") or {}).get(rank, -1),
                        "host": member["host"],
                        "server": member["server"],
                        "state": "lost" if lost else state,
                    }
                )
        return sorted(ranks, key=lambda r: int(r.get("rank_id", 0)))

    def write(self, now: float) -> None:
        """group.json now; a write that fails (a full disk) is tried again next round, and never ends the loop."""
        self.dirty = False
        self.last_write = now
        try:
            files.write_json(os.path.join(self.job_dir, files.GROUP_FILE), self.snapshot(final=self.status == ENDED))
        except OSError:
            self.dirty = True
