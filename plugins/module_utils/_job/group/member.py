# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A member, one on each server: it joins the coordinator, hands on its ranks' states, and stops them when told or when
the coordinator falls silent.

Runs on target hosts: Python 3.8+, stdlib only.
"""

from __future__ import annotations

import errno
import os
import secrets
import socket
import time

from ansible_collections.ascend.cluster.plugins.module_utils._job import files
from ansible_collections.ascend.cluster.plugins.module_utils._job.group.channel import Channel, wait_for
from ansible_collections.ascend.cluster.plugins.module_utils._job.group.protocol import (
    DONE_FLUSH_S,
    ERROR_CHARS,
    HEARTBEAT_S,
    RECONNECT_S,
    BadMessage,
    Side,
    join_line,
    own_key,
    read_challenge,
    session_key,
)


class Member(Side):
    """This server's side of the group, driven by its supervisor's loop (:meth:`poll`).

    ``cfg``: ``job_id``, ``secret`` (the job's on the coordinator's server, with ``coordinator`` true; elsewhere this
    server's own key, :func:`member_key`), ``address``, ``port`` (the coordinator's), ``host``, ``server`` (this server's
    inventory name and address), ``lost_after``, ``join_timeout``, ``clock_offset``. ``job_dir``: the job's directory
    here; ``ranks``: this server's ranks (``rank_id``, ``device_id``). ``on_gate(start_at)`` opens the gate here
    (``start_at`` in this server's clock), ``on_stop(reason)`` stops the local ranks.
    """

    def __init__(self, cfg: dict, job_dir: str, ranks: list, on_gate, on_stop, clock=time.time) -> None:
        super().__init__(cfg, job_dir, clock)
        self.ranks = [[int(r["rank_id"]), int(r["device_id"])] for r in ranks]  # what the coordinator is told at joining
        self.key = own_key(cfg)
        self.on_gate = on_gate
        self.on_stop = on_stop
        self.channel: Channel | None = None
        self.nonce = ""
        self.state = "connecting"  # joining (handshake), joined, lost (the coordinator), failed (never joined), left
        self.error = ""
        self.heard: float | None = None  # last word from the coordinator
        self.last_sent = 0.0
        self.next_attempt = 0.0
        self.gate_seen = False
        self.stopped = False
        self.pending_states: dict = {}
        self.line = ""
        self.record()

    def endpoint(self) -> str:
        return "%s:%s" % (self.cfg["address"], self.cfg["port"])

    def record(self) -> None:
        """``member.json``: what this server knows of the group (status and diagnose read it)."""
        data = {"state": self.state, "coordinator": self.endpoint(), "error": self.error, "heard": self.heard, "updated": self.clock()}
        try:
            files.write_json(os.path.join(self.job_dir, files.MEMBER_FILE), data)
        except OSError:
            pass

    # -- what the supervisor tells the group

    def states(self, states: dict) -> None:
        """Rank states that changed (rank id -> state): sent at once until the gate has opened (the coordinator opens it
        when every rank is staged), with the next heartbeat after."""
        self.pending_states.update((str(k), v) for k, v in states.items())
        if not self.gate_seen:
            self._send({"t": "hb"})

    def progress_line(self, line: str) -> None:
        self.line = line[-300:]

    def abort(self, reason: str, failure: dict | None) -> None:
        """This server's abort file got its first line: tell the coordinator (it stops every member)."""
        self._send({"t": "abort", "reason": reason, "failure": failure})

    def finish(self, ranks: list) -> None:
        """Every local rank has ended: send their final states and leave (tries for :data:`DONE_FLUSH_S`)."""
        deadline = self.clock() + DONE_FLUSH_S
        while self.state in ("connecting", "joining") and self.clock() < min(deadline, self.join_deadline) and not self.stopped:
            self.poll(0.05)
        if self.channel is not None and self.state == "joined":
            self._send({"t": "done", "ranks": ranks})
            while self.channel.outbuf and not self.channel.closed and self.clock() < deadline:
                wait_for(self.channel, 0.05, write=True)
                self.channel.flush()
        self.state = "left" if self.state == "joined" else self.state
        self.record()
        self.close()

    def close(self) -> None:
        if self.channel is not None:
            self.channel.close()
            self.channel = None

    # -- the loop

    def poll(self, timeout: float) -> None:
        """Wait up to ``timeout`` for the coordinator's word and act on it; connect, heartbeat, judge silence."""
        now = self.clock()
        if self.state in ("lost", "failed", "left"):
            time.sleep(timeout)
            return
        if self.channel is None:
            if now >= self.next_attempt:
                self._connect(now)
            if self.channel is None:
                time.sleep(min(timeout, max(0.0, self.next_attempt - now)))
                self._judge(self.clock())
                return
        channel = self.channel
        if channel.closed:  # since the last turn: a send that failed (a heartbeat, another thread's states or abort)
            self.channel = None
            self.next_attempt = now + RECONNECT_S
            self._judge(now)
            return
        readable, writable = wait_for(channel, timeout, write=bool(channel.outbuf))
        if writable:
            channel.flush()
        if readable:
            try:
                for line in channel.lines():
                    self._hear(line)
            except BadMessage as exc:
                self.error = "the coordinator at %s sent a message that is not the job's: %s" % (self.endpoint(), exc)
                channel.close()
            except Exception as exc:  # pylint: disable=broad-except  # what the connection brought never ends the loop
                self.error = "the coordinator at %s sent what this server could not take: %s: %s" % (
                    self.endpoint(),
                    type(exc).__name__,
                    str(exc)[:ERROR_CHARS],
                )
                channel.close()
        now = self.clock()
        if channel.closed:
            if self.state == "joining" and channel.key is not None and not self.error:
                self.error = (
                    "the coordinator at %s closed the connection while this server joined (not this job's secret?)" % self.endpoint()
                )
            self.channel = None
            self.next_attempt = now + RECONNECT_S
        elif self.state == "joined" and (now - self.last_sent >= HEARTBEAT_S):
            self._send({"t": "hb"})
        self._judge(now)

    def _judge(self, now: float) -> None:
        if self.state == "joined" or (self.heard is not None and self.state in ("connecting", "joining")):
            if self.heard is not None and now - self.heard > self.lost_after and not self.stopped:
                self.state = "lost"
                self.error = "lost the job's coordinator at %s: no word from it for %g s" % (self.endpoint(), now - self.heard)
                self.record()
                self.close()
                self.stopped = True
                self.on_stop(self.error)
        elif now > self.join_deadline and not self.stopped:
            self.state = "failed"
            self.error = "could not join the job's group at %s within %ds: %s" % (
                self.endpoint(),
                self.join_deadline - self.started,
                self.error or "no answer",
            )
            self.record()
            self.close()
            self.stopped = True
            self.on_stop(self.error)

    def _connect(self, now: float) -> None:
        self.next_attempt = now + RECONNECT_S
        try:
            infos = socket.getaddrinfo(self.cfg["address"], int(self.cfg["port"]), 0, socket.SOCK_STREAM)
            family, kind, proto, _name, where = infos[0]
            sock = socket.socket(family, kind, proto)
        except (OSError, socket.gaierror) as exc:
            self.error = "cannot reach %s: %s" % (self.endpoint(), exc)
            return
        sock.setblocking(False)
        code = sock.connect_ex(where)
        if code not in (0, errno.EINPROGRESS, errno.EAGAIN, errno.EWOULDBLOCK):
            sock.close()
            self.error = "cannot connect to %s: %s" % (self.endpoint(), os.strerror(code))
            return
        self.channel = Channel(sock, "m")
        self.state = "joining"

    def _hear(self, line: bytes) -> None:
        channel = self.channel
        if channel is None:
            return
        if channel.key is None:
            coordinator_nonce = read_challenge(line, self.job_id)
            self.nonce = secrets.token_hex(16)
            channel.key = session_key(self.key, self.job_id, coordinator_nonce, self.nonce)
            body = {"server": self.cfg.get("server") or self.cfg["host"], "ranks": self.ranks, "pid": os.getpid(), "t": "join"}
            channel.send_raw(join_line(self.key, self.job_id, coordinator_nonce, str(self.cfg["host"]), self.nonce, body))
            channel.seq_out = 1
            self.last_sent = self.clock()
            return
        message = channel.open(line)
        self.heard = self.clock()
        kind = message["t"]
        if kind == "welcome":
            if self.state != "joined":
                self.state = "joined"
                self.error = ""
                self.record()
        elif kind == "gate" and not self.gate_seen:
            self.gate_seen = True
            self.on_gate(float(message["start_at"]) + self.offset)
        elif kind == "stop" and not self.stopped:
            self.stopped = True
            self.on_stop(str(message.get("reason") or "stopped by the job's group"))

    def _send(self, message: dict) -> None:
        if self.channel is None or self.state != "joined":
            return
        if self.pending_states:
            message = dict(message, states=self.pending_states)
            self.pending_states = {}
        if self.line:
            message = dict(message, line=self.line)
            self.line = ""
        self.channel.send(message)
        self.last_sent = self.clock()
