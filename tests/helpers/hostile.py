"""Hostile input for the job's group (issue 34): what may reach the coordinator's port, and how to throw it there.

Two kinds of attacker (docs/security.md): anyone who can reach the port without a key (a local user, anything on the
management network), and training code on a member's server, which can read that server's key and so join as that
server. For the first: the frames the issue's attacks used (:data:`ADVERSARIAL`, :func:`streams`) and a hypothesis
strategy of generated lines, shaped like the protocol's or not (:func:`unjoined_frames`); for the second: sealed bodies
of any shape (:func:`sealed_bodies`), sent on a connection that joined with that server's key (:class:`Insider`).

Used by tests/unit/plugins/module_utils/test_job_group_hostile.py (a short, derandomised run) and
bench/bench_group_fuzz.py (the long run, >= 100 000 frames).
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import threading
import time
from typing import Any, Callable

from hypothesis import strategies as st

from .collection import install_import_path

install_import_path()  # the benchmarks import these helpers too, without pytest's conftest

from ansible_collections.ascend.cluster.plugins.module_utils import _job_group as group  # noqa: E402

HEX = "0123456789abcdef"
MIB = 1 << 20


def join_shaped(mac: bytes, host_hex: bytes, nonce: bytes, body: bytes) -> bytes:
    return b"%s %s %s %s\n" % (mac, host_hex, nonce, body)


# The single lines the attacks sent (and their neighbours), each on a connection of its own.
ADVERSARIAL: dict = {
    "non-ASCII MAC (old join shape)": "é".encode() * 32 + b' {"t":"join","nonce":"00","host":"a"}\n',
    "non-ASCII MAC (join shape)": join_shaped("é".encode() * 32, b"61", b"0" * 32, b"{}"),
    "nested [ body (old join shape)": b"0" * 64 + b" " + b"[" * 1000 + b"\n",
    "nested [ body (join shape)": join_shaped(b"0" * 64, b"61", b"0" * 32, b"{" + b'"a":[' * 600 + b"}"),
    "nested [ without a newline": b"[" * 3000,
    "random bytes": bytes(range(256)) * 4 + b"\n",
    "4 GiB length prefix": b"\xff\xff\xff\xff" + b"\x00" * 64,
    "forged abort, sealed with no key": b"0" * 64 + b' {"reason":"rank 0 failed (rc=1)","t":"abort"}\n',
    "a join for a host not in the job": join_shaped(b"0" * 64, b"7a7a", b"0" * 32, b'{"t":"join"}'),
    "a join with a host that is not UTF-8": join_shaped(b"0" * 64, b"ff", b"0" * 32, b'{"t":"join"}'),
    "empty line": b"\n",
    "NULs and CR": b"\x00\r\x00\r\n",
    "a line of 5000 x": b"x" * 5000 + b"\n",
    "many short lines": b"x\n" * 2000,
}


def throw(port: int, data: bytes, wait: float = 5.0) -> tuple:
    """Connect to the coordinator, send ``data``, close our sending side, read until it closes: ``(what it said, seconds
    until it closed, bytes it took before refusing the rest)``."""
    began = time.monotonic()
    sock = socket.create_connection(("127.0.0.1", port), timeout=wait)
    said = b""
    sent = 0
    try:
        try:
            sent_view = memoryview(data)
            while sent < len(data):
                sent += sock.send(sent_view[sent : sent + 65536])
            sock.shutdown(socket.SHUT_WR)
        except OSError:  # it hung up on us first: what it refused, it did not read
            pass
        try:
            while True:
                got = sock.recv(65536)
                if not got:
                    break
                said += got
        except OSError:
            pass
    finally:
        sock.close()
    return said, time.monotonic() - began, sent


def throw_elsewhere(port: int, data: bytes, wait: float = 5.0) -> tuple:
    """:func:`throw` from a process of its own (:func:`elsewhere`): ``(what it said, seconds, bytes sent)``."""
    said, took, sent = elsewhere(lambda: [x.decode("latin-1") if isinstance(x, bytes) else x for x in throw(port, data, wait)])
    return said.encode("latin-1"), took, sent


def stream(port: int, first: bytes, chunk: bytes, seconds: float) -> dict:
    """Send ``first`` then ``chunk`` over and over for up to ``seconds``, until the coordinator hangs up: ``{"sent",
    "cut_after_s"}`` (``cut_after_s`` None when it never did)."""
    began = time.monotonic()
    sock = socket.create_connection(("127.0.0.1", port), timeout=seconds)
    sent, cut = 0, None
    try:
        sock.sendall(first)
        sent = len(first)
        while time.monotonic() - began < seconds:
            sent += sock.send(chunk)
    except OSError:
        cut = time.monotonic() - began
    finally:
        sock.close()
    return {"sent": sent, "cut_after_s": cut}


def elsewhere(call: Callable[[], Any]) -> Any:
    """``call()`` in a forked process of its own, as an attacker on the machine runs (not a thread of the test's
    process, which would share the coordinator's interpreter lock); its result (JSON)."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        code = 1
        try:
            os.close(read_end)
            os.write(write_end, json.dumps(call()).encode())
            code = 0
        finally:
            os._exit(code)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        said = pipe.read()
    os.waitpid(pid, 0)
    return json.loads(said) if said else None


def in_parallel(calls: list) -> list:
    """Run every call in a thread of its own at once; their results, in order."""
    results: list = [None] * len(calls)

    def run(i: int, call: Callable[[], Any]) -> None:
        results[i] = call()

    threads = [threading.Thread(target=run, args=(i, call), daemon=True) for i, call in enumerate(calls)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    return results


# -- generated lines, before joining


def _hex(min_size: int, max_size: int) -> Any:
    return st.text(alphabet=HEX, min_size=min_size, max_size=max_size).map(str.encode)


def _json_value() -> Any:
    scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=20))
    return st.recursive(
        scalars,
        lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)),
        max_leaves=20,
    )


def _json_bytes() -> Any:
    return _json_value().map(lambda v: json.dumps(v).encode())


def _deep(max_depth: int = 5000) -> Any:
    """Nested brackets: around and past the depth at which the json module gives up (a RecursionError at ~1000)."""
    depth = st.one_of(st.sampled_from([999, 1000, 1001, 2000, max_depth]), st.integers(1, max_depth))
    return st.builds(lambda n, open_, tail: open_ * n + tail, depth, st.sampled_from([b"[", b"{", b'{"a":']), st.binary(max_size=8))


def _mac_like() -> Any:
    return st.one_of(
        _hex(64, 64),
        _hex(0, 70),
        st.text(min_size=1, max_size=64).map(lambda t: t.replace(" ", "").replace("\n", "").encode()),
        st.binary(min_size=1, max_size=64).map(lambda b: b.replace(b" ", b"").replace(b"\n", b"")),
    )


def unjoined_frames() -> Any:
    """One line (or a part of one) as a connection not joined yet may send: shaped like a join, a sealed message or a
    challenge, with every part right or wrong, or any bytes."""
    body = st.one_of(_json_bytes(), _deep(), st.binary(max_size=64))
    join = st.builds(
        join_shaped, _mac_like(), st.one_of(_hex(2, 40), st.just(b"61"), st.binary(max_size=8)), st.one_of(_hex(32, 32), _hex(0, 40)), body
    )
    sealed = st.builds(lambda mac, b: mac + b" " + b + b"\n", _mac_like(), body)
    # the join of the protocol before issue 34 (a JSON body whose nonce made the key): what an old client sends
    old_join = st.builds(
        lambda mac, fields: mac + b" " + json.dumps(dict(fields, t="join")).encode() + b"\n",
        _mac_like(),
        st.fixed_dictionaries({"nonce": st.text(max_size=40), "host": st.text(max_size=10)}, optional={"ranks": _json_value()}),
    )
    challenge = st.builds(lambda n, j: b"challenge " + n + b" " + j + b"\n", _hex(32, 32), _hex(0, 20))
    raw = st.binary(max_size=600)
    return st.one_of(join, sealed, old_join, challenge, raw, raw.map(lambda b: b + b"\n"))


# -- generated messages after joining (training code holding one server's key)


def sealed_bodies() -> Any:
    """The JSON body of a message sealed with a joined server's own key: any shape, any fields - but not an ``abort`` or
    ``done`` of its own, which a server holding its key may rightly send (it stops the job, or leaves it)."""
    kinds = st.one_of(st.just("hb"), st.text(max_size=10).filter(lambda t: t not in ("abort", "done")))
    fields = st.dictionaries(st.sampled_from(["states", "line", "ranks", "reason", "failure", "start_at", "x"]), _json_value(), max_size=4)
    message = st.builds(lambda t, more: dict(more, t=t), kinds, fields).map(lambda m: json.dumps(m).encode())
    return st.one_of(message, _deep(), _json_bytes(), st.binary(max_size=64))


class Insider:
    """A connection joined as ``host`` with that server's own key (what training code on that server can read), sending
    sealed lines of its choosing."""

    def __init__(self, port: int, job_id: str, host: str, key: str) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        buffer = b""
        while b"\n" not in buffer:
            got = self.sock.recv(4096)
            if not got:
                raise ConnectionError("the coordinator closed the connection before its challenge")
            buffer += got
        challenge, _sep, buffer = buffer.partition(b"\n")
        coordinator_nonce = group.read_challenge(challenge, job_id)
        nonce = secrets.token_hex(16)
        self.key = group.session_key(key, job_id, coordinator_nonce, nonce)
        self.sock.sendall(
            group.join_line(key, job_id, coordinator_nonce, host, nonce, {"t": "join", "server": host, "ranks": [], "pid": 1})
        )
        self.seq = 1
        while b"\n" not in buffer:  # its welcome
            got = self.sock.recv(4096)
            if not got:
                raise ConnectionError("the coordinator refused the join")
            buffer += got

    def send(self, body: bytes) -> bool:
        """Send ``body`` sealed as the next message; False when the coordinator has closed the connection."""
        self.seq += 1
        body = body.replace(b"\n", b" ")
        mac = group._seal(self.key, "m", self.seq, body)  # pylint: disable=protected-access  # the attacker seals as a member does
        try:
            self.sock.sendall(b"%s %s\n" % (mac, body))
            return True
        except OSError:
            return False

    def close(self) -> None:
        self.sock.close()
