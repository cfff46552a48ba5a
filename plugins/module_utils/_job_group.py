# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The job's group: every server's supervisor is a member, one coordinator on rank 0's server.

What the group is for (docs/launch.md, *The job's group*): a stop that starts on one server - a rank that failed or
was signalled, ranks lost with their runner, ``stop.yml``, the controller's Ctrl-C, a stalled rank - reaches every
server's supervisor within a fraction of a second, with or without a controller, whatever Ansible's ``forks``; a
server that goes silent is found by heartbeats between the servers; and the gate opens on every server from one
decision once every member has joined.

The protocol (this module is its only owner):

- **Transport.** TCP to ``<coordinator address>:<port>`` on the management network (the coordinator binds that one
  address, nothing else). Each message is one line; a line longer than :data:`MAX_LINE` ends the connection.
- **Keys.** The job's secret stays on the coordinator's server. Every other server holds only its own key,
  :func:`member_key` ``HMAC(secret, "ascend-group-member|job|host")``, which the controller derives for it (the
  ``training_ranks`` action): a server's key lets it join as itself and as nobody else.
- **Joining** (mutual challenge-response, HMAC-SHA256, as ``multiprocessing.connection`` authenticates, and with
  per-message MACs after it): the coordinator sends ``challenge <its nonce> <job id, hex>`` in the clear; the member
  answers ``<mac> <its host, hex> <its nonce> <json: server, ranks, pid>``, the MAC made with the session key
  :func:`session_key` ``HMAC(member key, "ascend-group|job|coordinator nonce|member nonce")`` over everything after
  it; the coordinator derives that member's key from the secret, checks the MAC and only then reads the JSON; it
  answers ``welcome`` sealed with the same key, which proves to the member that the coordinator holds the secret too.
  Every later message is ``<mac> <json>``, sealed with the session key over its direction and sequence number, so a
  message can be neither forged, nor replayed, nor moved to another connection without the key. Nothing before the
  MAC check is parsed as JSON: the lines before it have fixed shapes, checked by regular expressions on bytes.
- **What no input can do** (docs/security.md): a connection not yet joined may send at most
  :data:`MAX_UNJOINED_BYTES` in all and has :data:`HANDSHAKE_S` to join; every read takes at most
  :data:`READ_CHUNK` bytes from one connection before the loop serves the others and its heartbeats; the line length
  is checked on every read; at most :data:`MAX_UNJOINED` connections wait to join (the oldest is closed for a new
  one). A line that is not the job's closes its connection (``refused_connections``); any other error while one
  connection's input is handled closes that connection alone and is counted (``connection_errors``).
- **Member -> coordinator**: ``hb`` (every :data:`HEARTBEAT_S`; carries ``states``, the member's rank states when they
  changed, and ``line``, the last log line of its first rank), ``abort`` (``reason``: the first line of the server's
  abort file, ``failure``: the failure record when a rank failed there), ``done`` (``ranks``: every local rank's final
  state; the member leaves).
- **Coordinator -> member**: ``welcome``, ``hb``, ``gate`` (``start_at`` in the controller's clock), ``stop``
  (``reason``: the line the member records in its abort file before it stops its ranks).
- **Its own liveness.** The coordinator rewrites ``group.json`` every heartbeat round (``updated``, in its server's
  clock); an exception that ends its loop is caught, told to every member as a stop, and written there as status
  :data:`CRASHED` with the error (its stderr goes to ``coordinator.log`` in the job's directory). When two or more
  joined members fall silent at once, or its own loop did not run for half the loss window, the coordinator takes the
  silence for its own fault (``cause.coordinator``) and blames no server (their state :data:`CUT_OFF`).

A member that hears nothing from the coordinator for ``lost_after`` seconds stops its ranks (the coordinator's server
died, or this one was cut off); the coordinator stops the group when a joined member is silent that long. A
connection that breaks is made again while the other side may still be alive: only silence counts.

Runs on target hosts: Python 3.8+, stdlib only.
"""

from __future__ import annotations

import errno
import hashlib
import hmac
import json
import os
import posixpath
import re
import secrets
import select
import selectors
import socket
import time
import traceback
from shlex import quote

from ansible_collections.ascend.cluster.plugins.module_utils import _job_files as files
from ansible_collections.ascend.cluster.plugins.module_utils._job_control import fail_fast
from ansible_collections.ascend.cluster.plugins.module_utils._job_procs import pid_alive

HEARTBEAT_S = 0.5  # how often each side speaks when it has nothing else to say
LOST_AFTER_S = 3.0  # default silence after which the other side is lost (docs/launch.md: detection <= 5 s)
# the least silence a job may take for a loss: two heartbeats - less, and one heartbeat late on a busy server (a loaded
# controller, a slow disk) stops a healthy job as lost
MIN_LOST_AFTER_S = 2 * HEARTBEAT_S
HANDSHAKE_S = 5.0  # a connection that has not joined by then is closed
RECONNECT_S = 0.2  # between attempts to reach the coordinator
MAX_LINE = 8 << 20  # bytes; a done message of 16 ranks with their log tails is ~50 KB
# bytes a connection may send before it has joined (the join line: ~300 bytes, with a host name of 255 and 64 ranks
# ~1.5 KB); more, and it is closed before the loop holds a byte of it longer
MAX_UNJOINED_BYTES = 4096
MAX_UNJOINED = 256  # connections waiting to join at once; a new one closes the oldest (a flood cannot exhaust the files)
READ_CHUNK = 65536  # bytes read from one connection per turn of the loop: no peer holds it longer than one read
ACCEPT_AT_ONCE = 64  # connections accepted per turn of the loop
WRITE_EVERY_S = 0.2  # the coordinator's group.json at most this often while nothing important changes
DONE_FLUSH_S = 2.0  # how long a leaving member tries to deliver its done message
CRASH_FLUSH_S = 1.0  # how long a crashing coordinator tries to tell its members
ERROR_CHARS = 300  # the most of an error's text the coordinator keeps of its own (a crash, a connection's error)
FIELD_CHARS = 4000  # the most of a member's text field it keeps (an abort's reason, a failure's error, a log line)
STATE_CHARS = 32  # the most of a rank's state a member may report

# group.json "status"
FORMING = "forming"  # members joining, the gate not opened yet
RUNNING = "running"  # the gate opened
STOPPING = "stopping"  # a stop was sent to every member; waiting for them to finish
ENDED = "ended"  # every member left or was lost: the file holds every rank's final state
CRASHED = "crashed"  # the coordinator's loop ended by an exception (``error``); it writes nothing more

# a member's state in group.json: waiting, joined, done (it left), lost (silent: its server is blamed), missing (never
# joined), and CUT_OFF: silent together with every other member - the coordinator lost them all, no server is blamed
CUT_OFF = "cut_off"

# group.json "outcome" once ended
DONE = "done"
FAILED = "failed"
STOPPED = "stopped"


GATE_WAIT_S = 0.05  # the gate request's shell loop: between looks at group.json


def gate_wait_command(job_dir: str, wait: float) -> str:
    """One POSIX shell command that waits up to ``wait`` seconds for the coordinator on this server to open the gate (or
    stop the job before it) and prints its ``group.json`` (``_job_files.parse_read``); refuses a job not recorded in
    ``job_dir``."""
    group_file = posixpath.join(job_dir, files.GROUP_FILE)
    rounds = max(1, int(wait / GATE_WAIT_S))
    answered = "|".join('"status": "%s"' % s for s in (RUNNING, STOPPING, ENDED, CRASHED))
    return (
        "test -f %s || { echo %s; exit 3; }; "
        % (quote(posixpath.join(job_dir, files.JOB_FILE)), quote("no job recorded in %s on this host" % job_dir))
        + "N=0; while [ $N -lt %d ] && ! grep -qE %s %s 2>/dev/null; do sleep %s; N=$((N+1)); done; "
        % (rounds, quote(answered), quote(group_file), GATE_WAIT_S)
        + files.read_command(job_dir)
    )


def wait_gate(job_dir: str, wait: float) -> dict | None:
    """What :func:`gate_wait_command` does, in Python (the module's way): the coordinator's view once the gate opened or
    the job was stopped, or as it is after ``wait`` seconds."""
    deadline = time.time() + wait
    while True:
        view = files.read_json(os.path.join(job_dir, files.GROUP_FILE))
        if (isinstance(view, dict) and view.get("status") in (RUNNING, STOPPING, ENDED, CRASHED)) or time.time() > deadline:
            return view if isinstance(view, dict) else None
        time.sleep(GATE_WAIT_S)


def not_started(view: dict) -> list:
    """``host: what it lacks`` for every member that keeps the gate shut: not joined, or ranks not staged yet."""
    found = []
    for host, member in sorted((view.get("members") or {}).items()):
        if not isinstance(member, dict):
            continue
        if member.get("state") != "joined":
            found.append("%s (not joined: %s)" % (host, member.get("state")))
        elif member.get("unstaged"):
            found.append("%s (ranks not staged: %s)" % (host, ", ".join(str(r) for r in member["unstaged"])))
    return found


def gate_answer(view: dict | None, wait: float) -> dict:
    """The gate's result from the coordinator's view: ``start_at`` (the controller's clock) once the gate opened, else
    ``failed`` with the reason - the stop that came first, or (``missing``) the servers that kept it shut ``wait`` s."""
    if not isinstance(view, dict):
        return {"failed": True, "msg": "the job's coordinator wrote no group view (%s): its supervisor did not start?" % files.GROUP_FILE}
    if view.get("gate_at") is not None:
        return {"changed": True, "start_at": float(view["gate_at"]), "group": view}
    cause = view.get("cause") or {}
    if view.get("status") == FORMING:
        missing = not_started(view)
        why = "; ".join(missing) if missing else "no answer"
        msg = "the job's group at %s did not open the gate within %g s: %s" % (view.get("endpoint"), wait, why)
        hosts = sorted(h.split(" ", 1)[0] for h in missing)
        return {"failed": True, "msg": msg, "missing": hosts, "group": view}
    msg = str(cause.get("error") or view.get("stop_reason") or "the job was stopped before its gate opened")
    return {"failed": True, "msg": msg, "missing": cause.get("missing") or [], "group": view}


def _clock(when: object) -> str:
    if isinstance(when, (int, float)) and not isinstance(when, bool):
        return time.strftime("%H:%M:%S", time.localtime(float(when)))
    return "?"


def health(job_dir: str, now: float | None = None) -> dict:
    """What this server's files say of the job's group (``status`` and ``diagnose``): ``{"coordinator": group.json's
    status here (on the coordinator's server) or None, "member": this server's member's state or None, "problem": one
    sentence naming the coordinator's crash or loss, or None}``. Read only; the times are this server's clock."""
    now = time.time() if now is None else now
    view = files.read_json(os.path.join(job_dir, files.GROUP_FILE))
    member = files.read_json(os.path.join(job_dir, files.MEMBER_FILE))
    view = view if isinstance(view, dict) else None
    member = member if isinstance(member, dict) else None
    problem = None
    if view is not None:
        status, cause = view.get("status"), view.get("cause")
        lost_after = float(view.get("lost_after") or LOST_AFTER_S)
        updated = view.get("updated")
        if status == CRASHED:
            problem = "the job's coordinator at %s crashed at %s: %s (its log: %s)" % (
                view.get("endpoint"),
                _clock(view.get("crashed_at")),
                view.get("error"),
                view.get("log"),
            )
        elif isinstance(cause, dict) and "coordinator" in cause:
            problem = str(cause.get("error"))
        elif status != ENDED and isinstance(updated, (int, float)) and now - updated > lost_after + 1:
            pid = view.get("pid")
            alive = isinstance(pid, int) and pid_alive(pid)
            problem = "the job's coordinator at %s has not rewritten its group.json since %s (%.0f s ago; its process %s %s)" % (
                view.get("endpoint"),
                _clock(updated),
                now - updated,
                pid,
                "still runs: stalled?" if alive else "is gone",
            )
    if problem is None and member is not None and member.get("state") == "lost":
        problem = "%s (at %s)" % (member.get("error") or "lost the job's coordinator", _clock(member.get("updated")))
    return {
        "coordinator": view.get("status") if view is not None else None,
        "member": member.get("state") if member is not None else None,
        "problem": problem,
    }


class GroupError(Exception):
    """The group cannot be set up (the address cannot be bound, the secret is unusable); the message says what to do."""


class BadMessage(Exception):
    """A line that is not a valid, correctly sealed message of this connection."""


def new_secret() -> str:
    """A fresh per-job secret (the controller makes one per job; this is for tests and standalone use)."""
    return secrets.token_urlsafe(32)


def member_key(secret: str, job_id: str, host: str) -> str:
    """The key of the member ``host`` of the job ``job_id``: what its server holds instead of the job's secret (hex)."""
    text = "ascend-group-member|%s|%s" % (job_id, host)
    return hmac.new(secret.encode("utf-8"), text.encode("utf-8"), hashlib.sha256).hexdigest()


def own_key(cfg: dict) -> str:
    """The key a member joins with: derived from the job's secret on the coordinator's server (``coordinator``), the
    server's own key (what ``group_secret`` is there) elsewhere."""
    if cfg.get("coordinator"):
        return member_key(str(cfg["secret"]), str(cfg["job_id"]), str(cfg["host"]))
    return str(cfg["secret"])


def session_key(key: str, job_id: str, coordinator_nonce: str, member_nonce: str) -> bytes:
    """The key that seals every message of one connection, from the member's key and both sides' nonces."""
    text = "ascend-group|%s|%s|%s" % (job_id, coordinator_nonce, member_nonce)
    return hmac.new(key.encode("utf-8"), text.encode("utf-8"), hashlib.sha256).digest()


def _seal(key: bytes, direction: str, seq: int, body: bytes) -> bytes:
    """The MAC of one sealed line (lowercase hex, as bytes)."""
    return hmac.new(key, b"%s|%d|%s" % (direction.encode("ascii"), seq, body), hashlib.sha256).hexdigest().encode("ascii")


# The shapes of the lines, checked on the raw bytes before anything else is made of them.
_NONCE = rb"[0-9a-f]{32}"
_CHALLENGE = re.compile(rb"challenge (" + _NONCE + rb") ((?:[0-9a-f]{2}){1,1024})")
_JOIN = re.compile(rb"([0-9a-f]{64}) ((?:[0-9a-f]{2}){1,1024}) (" + _NONCE + rb") (\{.*\})", re.S)
_SEALED = re.compile(rb"([0-9a-f]{64}) (\{.*\})", re.S)


def challenge_line(nonce: str, job_id: str) -> bytes:
    return b"challenge %s %s\n" % (nonce.encode("ascii"), job_id.encode("utf-8").hex().encode("ascii"))


def read_challenge(line: bytes, job_id: str) -> str:
    """The coordinator's nonce from its challenge line, which must name ``job_id``; BadMessage else."""
    found = _CHALLENGE.fullmatch(line)
    if found is None or found.group(2) != job_id.encode("utf-8").hex().encode("ascii"):
        raise BadMessage("not this job's challenge")
    return found.group(1).decode("ascii")


def join_line(key: str, job_id: str, coordinator_nonce: str, host: str, nonce: str, body: dict) -> bytes:
    """The member's join: ``<mac> <host, hex> <nonce> <json>``, the MAC over all after it with the session key."""
    rest = b"%s %s %s" % (host.encode("utf-8").hex().encode("ascii"), nonce.encode("ascii"), _json(body))
    return b"%s %s\n" % (_seal(session_key(key, job_id, coordinator_nonce, nonce), "m", 1, rest), rest)


def read_join(line: bytes) -> tuple:
    """``(mac, host, nonce, rest, body)`` of a join line's shape (nothing checked but the shape); BadMessage else."""
    found = _JOIN.fullmatch(line)
    if found is None:
        raise BadMessage("not a join")
    try:
        host = bytes.fromhex(found.group(2).decode("ascii")).decode("utf-8")
    except (ValueError, UnicodeDecodeError):
        raise BadMessage("not a host name") from None
    rest = line[65:]
    return found.group(1), host, found.group(3).decode("ascii"), rest, found.group(4)


def _json(message: dict) -> bytes:
    return json.dumps(message, separators=(",", ":"), sort_keys=True).encode("utf-8")


def parse_body(body: bytes) -> dict:
    """The message in an authenticated line's JSON; BadMessage when it is not one (however deep or odd)."""
    try:
        message = json.loads(body.decode("utf-8"))
    except (ValueError, RecursionError):
        raise BadMessage("not JSON") from None
    if not isinstance(message, dict) or not isinstance(message.get("t"), str):
        raise BadMessage("not a message")
    return message


def listen(address: str, port: int) -> socket.socket:
    """The coordinator's listening socket on ``address`` only (never all interfaces); GroupError naming what to fix."""
    try:
        infos = socket.getaddrinfo(address, port, 0, socket.SOCK_STREAM, 0, socket.AI_NUMERICHOST)
    except (socket.gaierror, UnicodeError) as exc:
        raise GroupError("the job's group address %r is not an IP address: %s" % (address, exc)) from None
    family, kind, proto, _name, where = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(where)
        sock.listen(512)
    except OSError as exc:
        sock.close()
        hint = ""
        if exc.errno == errno.EADDRINUSE:
            hint = ": another process listens on it (a job still ending? ascend.cluster.stop), or set ascend_launch_group_port"
        elif exc.errno == errno.EADDRNOTAVAIL:
            hint = ": it is not an address of this server"
        raise GroupError("cannot listen on %s port %d for the job's group: %s%s" % (address, port, exc.strerror or exc, hint)) from None
    sock.set_inheritable(True)
    return sock


class Channel:
    """One connection's lines: non-blocking reads (bounded: see the module docstring) and writes, sealing and checking
    every message once the connection has its key."""

    def __init__(self, sock: socket.socket, sends: str) -> None:
        sock.setblocking(False)
        self.sock = sock
        self.sends = sends  # "c" (coordinator -> member) or "m": the direction of what this side sends
        self.hears = "m" if sends == "c" else "c"
        self.key: bytes | None = None
        self.seq_out = 0
        self.seq_in = 0
        self.inbuf = bytearray()  # the line being received (no newline in it)
        self.received = 0  # bytes received in all
        self.outbuf = b""
        self.closed = False
        self.why = ""  # why this side closed it, when it did for what it received

    def fileno(self) -> int:
        return self.sock.fileno()

    def send(self, message: dict) -> None:
        """Queue ``message`` sealed (the key must be known) and write what the socket takes now."""
        if self.closed:
            return
        body = _json(message)
        if self.key is None:
            raise GroupError("a message before the connection has its key")
        self.seq_out += 1
        self.send_raw(b"%s %s\n" % (_seal(self.key, self.sends, self.seq_out, body), body))

    def send_raw(self, line: bytes) -> None:
        """Queue one line as it is (the handshake's) and write what the socket takes now."""
        if not self.closed:
            self.outbuf += line
            self.flush()

    def flush(self) -> None:
        while self.outbuf and not self.closed:
            try:
                sent = self.sock.send(self.outbuf)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                self.close()
                return
            self.outbuf = self.outbuf[sent:]

    def lines(self) -> list:
        """The lines completed by one read of at most :data:`READ_CHUNK` bytes (raw, without their newline); the channel
        is closed at EOF, an error, a line longer than :data:`MAX_LINE`, or more than :data:`MAX_UNJOINED_BYTES` before
        the connection has its key."""
        if self.closed:
            return []
        try:
            data = self.sock.recv(READ_CHUNK)
        except (BlockingIOError, InterruptedError):
            return []
        except OSError:
            self.close()
            return []
        if not data:
            self.close()
            return []
        self.received += len(data)
        if self.key is None and self.received > MAX_UNJOINED_BYTES:
            self.close("%d bytes before joining" % self.received)
            return []
        if b"\n" not in data:
            self.inbuf += data
            got: list = []
        else:
            parts = data.split(b"\n")
            got = [bytes(self.inbuf) + parts[0]] + parts[1:-1]
            self.inbuf = bytearray(parts[-1])
        if len(self.inbuf) > MAX_LINE or any(len(line) > MAX_LINE for line in got):
            self.close("a line longer than %d bytes" % MAX_LINE)
            return []
        return got

    def open(self, line: bytes) -> dict:
        """The message in ``line``, checked against the session key and the next sequence number; BadMessage else."""
        if self.key is None:
            raise BadMessage("a sealed message before the handshake")
        found = _SEALED.fullmatch(line)
        if found is None:
            raise BadMessage("not a sealed message")
        if not hmac.compare_digest(found.group(1), _seal(self.key, self.hears, self.seq_in + 1, found.group(2))):
            raise BadMessage("bad MAC")
        self.seq_in += 1
        return parse_body(found.group(2))

    def close(self, why: str = "") -> None:
        if not self.closed:
            self.closed = True
            self.why = self.why or why
            try:
                self.sock.close()
            except OSError:
                pass


# ---------------------------------------------------------------------------------------------------------------
# The coordinator


class _Peer:
    """One connection at the coordinator, and the member it became once joined."""

    def __init__(self, channel: Channel, nonce: str, now: float) -> None:
        self.channel = channel
        self.nonce = nonce
        self.opened = now
        self.host: str | None = None  # set once joined


class _Side:
    """What both sides of the group take from their ``cfg``: the job, its secret, the silence that loses the other
    side, how long to wait for the group to form, and this server's clock offset against the controller."""

    def __init__(self, cfg: dict, job_dir: str, clock) -> None:
        self.cfg = cfg
        self.job_id = str(cfg["job_id"])
        self.secret = str(cfg["secret"])
        self.job_dir = job_dir
        self.clock = clock
        self.lost_after = float(cfg.get("lost_after") or LOST_AFTER_S)
        self.started = clock()
        self.join_deadline = self.started + float(cfg.get("join_timeout") or 600)
        self.offset = float(cfg.get("clock_offset") or 0.0)


class Coordinator(_Side):
    """The job's coordinator: accepts members, relays the first stop to every member, opens the gate, ends the job.

    ``cfg``: ``job_id``, ``secret``, ``hosts`` (the inventory names of every member it waits for), ``lost_after``,
    ``join_timeout`` (how long to wait for members before the gate is asked for), ``clock_offset`` (this server's
    clock minus the controller's, as the pre-flight measured it), ``servers`` (optional: host -> address, for
    messages), ``gate_margin`` (seconds from the moment every rank is staged to the common start), ``fail_fast`` (the
    job's, ``_job_control.fail_fast``: shown in ``group.json`` for the watch and the report; the members' runners act on
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
        if not hmac.compare_digest(mac, _seal(key, "m", 1, rest)):
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
            ranks=member["ranks"] or dict((str(r[0]), "pending") for r in _pairs(message.get("ranks"))),
            devices=dict((str(r[0]), r[1]) for r in _pairs(message.get("ranks"))),
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
            self._stop_for(member, str(message.get("reason") or "stopped")[:FIELD_CHARS], _failure(message.get("failure")))
        elif kind == "done":
            given = message.get("ranks")
            ranks = [r for r in given if _own_rank(r, member)] if isinstance(given, list) else []
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
        confirmed server by server, ``plugin_utils/_staging``)."""
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


# ---------------------------------------------------------------------------------------------------------------
# A member


class Member(_Side):
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


def _int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _text(value: object) -> str | None:
    return str(value)[:FIELD_CHARS] if value is not None else None


def _time(value: object) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _own_rank(rank: object, member: dict) -> bool:
    """Whether ``rank`` (of a member's ``done``) is a final state of one of that member's own ranks."""
    return (
        isinstance(rank, dict)
        and _int(rank.get("rank_id"))
        and str(rank["rank_id"]) in member["ranks"]
        and isinstance(rank.get("state"), str)
    )


def _failure(value: object) -> dict | None:
    """A member's failure record (``abort``), its fields of the types the watch and the report read; None when none."""
    if not isinstance(value, dict):
        return None
    tail = value.get("tail")
    fields = {
        "rank_id": value["rank_id"] if _int(value.get("rank_id")) else -1,
        "device_id": value["device_id"] if _int(value.get("device_id")) else -1,
        "rc": value["rc"] if _int(value.get("rc")) else None,
        "error": _text(value.get("error")),
        "log": _text(value.get("log")),
        "tail": [str(line)[:FIELD_CHARS] for line in tail[-100:]] if isinstance(tail, list) else [],
        "ended": _time(value.get("ended")),
        "lost": [r for r in value["lost"] if _int(r)] if isinstance(value.get("lost"), list) else [],  # ranks lost with their runner
        "since": _time(value.get("since")),
    }
    return dict((k, v) for k, v in fields.items() if k in value or k == "rank_id")


def _pairs(value: object) -> list:
    """``[[rank_id, device_id], ...]`` of a join message, the malformed entries left out."""
    pairs = []
    for item in value if isinstance(value, list) else []:
        if isinstance(item, list) and len(item) == 2 and all(isinstance(x, int) and not isinstance(x, bool) for x in item):
            pairs.append(item)
    return pairs


def wait_for(channel: Channel, timeout: float, write: bool = False) -> tuple:
    """Wait up to ``timeout`` for ``channel``: ``(readable, writable)``; writable is asked for only with ``write``."""
    poller = select.poll()
    poller.register(channel.sock, select.POLLIN | (select.POLLOUT if write else 0))
    try:
        ready = poller.poll(max(0, int(timeout * 1000)))
    except InterruptedError:  # pragma: no cover - PEP 475 retries
        ready = []
    mask = 0
    for _fd, events in ready:
        mask |= events
    readable = bool(mask & (select.POLLIN | select.POLLHUP | select.POLLERR))
    return readable, bool(mask & select.POLLOUT)
