# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The group's wire protocol: its timings and caps, the states group.json shows, the keys, the shapes of its lines and
what a sealed body may hold, and what both sides take from their configuration (the package docstring tells the whole).

Runs on target hosts: Python 3.8+, stdlib only.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import secrets

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


def seal(key: bytes, direction: str, seq: int, body: bytes) -> bytes:
    """The MAC of one sealed line (lowercase hex, as bytes)."""
    return hmac.new(key, b"%s|%d|%s" % (direction.encode("ascii"), seq, body), hashlib.sha256).hexdigest().encode("ascii")


# The shapes of the lines, checked on the raw bytes before anything else is made of them.
NONCE = rb"[0-9a-f]{32}"
CHALLENGE = re.compile(rb"challenge (" + NONCE + rb") ((?:[0-9a-f]{2}){1,1024})")
JOIN = re.compile(rb"([0-9a-f]{64}) ((?:[0-9a-f]{2}){1,1024}) (" + NONCE + rb") (\{.*\})", re.S)
SEALED = re.compile(rb"([0-9a-f]{64}) (\{.*\})", re.S)


def challenge_line(nonce: str, job_id: str) -> bytes:
    return b"challenge %s %s\n" % (nonce.encode("ascii"), job_id.encode("utf-8").hex().encode("ascii"))


def read_challenge(line: bytes, job_id: str) -> str:
    """The coordinator's nonce from its challenge line, which must name ``job_id``; BadMessage else."""
    found = CHALLENGE.fullmatch(line)
    if found is None or found.group(2) != job_id.encode("utf-8").hex().encode("ascii"):
        raise BadMessage("not this job's challenge")
    return found.group(1).decode("ascii")


def join_line(key: str, job_id: str, coordinator_nonce: str, host: str, nonce: str, body: dict) -> bytes:
    """The member's join: ``<mac> <host, hex> <nonce> <json>``, the MAC over all after it with the session key."""
    rest = b"%s %s %s" % (host.encode("utf-8").hex().encode("ascii"), nonce.encode("ascii"), dump(body))
    return b"%s %s\n" % (seal(session_key(key, job_id, coordinator_nonce, nonce), "m", 1, rest), rest)


def read_join(line: bytes) -> tuple:
    """``(mac, host, nonce, rest, body)`` of a join line's shape (nothing checked but the shape); BadMessage else."""
    found = JOIN.fullmatch(line)
    if found is None:
        raise BadMessage("not a join")
    try:
        host = bytes.fromhex(found.group(2).decode("ascii")).decode("utf-8")
    except (ValueError, UnicodeDecodeError):
        raise BadMessage("not a host name") from None
    rest = line[65:]
    return found.group(1), host, found.group(3).decode("ascii"), rest, found.group(4)


def dump(message: dict) -> bytes:
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


class Side:
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


def valid_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def valid_text(value: object) -> str | None:
    return str(value)[:FIELD_CHARS] if value is not None else None


def valid_time(value: object) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def own_rank(rank: object, member: dict) -> bool:
    """Whether ``rank`` (of a member's ``done``) is a final state of one of that member's own ranks."""
    return (
        isinstance(rank, dict)
        and valid_int(rank.get("rank_id"))
        and str(rank["rank_id"]) in member["ranks"]
        and isinstance(rank.get("state"), str)
    )


def valid_failure(value: object) -> dict | None:
    """A member's failure record (``abort``), its fields of the types the watch and the report read; None when none."""
    if not isinstance(value, dict):
        return None
    tail = value.get("tail")
    fields = {
        "rank_id": value["rank_id"] if valid_int(value.get("rank_id")) else -1,
        "device_id": value["device_id"] if valid_int(value.get("device_id")) else -1,
        "rc": value["rc"] if valid_int(value.get("rc")) else None,
        "error": valid_text(value.get("error")),
        "log": valid_text(value.get("log")),
        "tail": [str(line)[:FIELD_CHARS] for line in tail[-100:]] if isinstance(tail, list) else [],
        "ended": valid_time(value.get("ended")),
        "lost": [r for r in value["lost"] if valid_int(r)] if isinstance(value.get("lost"), list) else [],  # ranks lost with their runner
        "since": valid_time(value.get("since")),
    }
    return dict((k, v) for k, v in fields.items() if k in value or k == "rank_id")


def valid_pairs(value: object) -> list:
    """``[[rank_id, device_id], ...]`` of a join message, the malformed entries left out."""
    pairs = []
    for item in value if isinstance(value, list) else []:
        if isinstance(item, list) and len(item) == 2 and all(isinstance(x, int) and not isinstance(x, bool) for x in item):
            pairs.append(item)
    return pairs
