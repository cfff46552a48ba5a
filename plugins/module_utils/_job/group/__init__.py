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

from ansible_collections.ascend.cluster.plugins.module_utils._job.group.channel import listen
from ansible_collections.ascend.cluster.plugins.module_utils._job.group.coordinator import Coordinator
from ansible_collections.ascend.cluster.plugins.module_utils._job.group.member import Member
from ansible_collections.ascend.cluster.plugins.module_utils._job.group.protocol import (
    CRASHED,
    CUT_OFF,
    DONE,
    ENDED,
    FAILED,
    FORMING,
    HEARTBEAT_S,
    LOST_AFTER_S,
    MAX_UNJOINED_BYTES,
    MIN_LOST_AFTER_S,
    RUNNING,
    STOPPING,
    GroupError,
    join_line,
    member_key,
    read_challenge,
    seal,
    session_key,
)
from ansible_collections.ascend.cluster.plugins.module_utils._job.group.view import gate_answer, gate_wait_command, health, wait_gate

# What the group's users take from it (``group.X``): its states, timings, keys, the two sides, the gate's wait.
__all__ = [
    "CRASHED",
    "CUT_OFF",
    "DONE",
    "ENDED",
    "FAILED",
    "FORMING",
    "HEARTBEAT_S",
    "LOST_AFTER_S",
    "MAX_UNJOINED_BYTES",
    "MIN_LOST_AFTER_S",
    "RUNNING",
    "STOPPING",
    "Coordinator",
    "GroupError",
    "Member",
    "annotations",
    "gate_answer",
    "gate_wait_command",
    "health",
    "join_line",
    "listen",
    "member_key",
    "read_challenge",
    "seal",
    "session_key",
    "wait_gate",
]
