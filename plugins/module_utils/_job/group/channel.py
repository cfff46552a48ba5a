# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""One TCP connection of the group: bounded, line-at-a-time reads, sealed writes, and the listening socket.

Runs on target hosts: Python 3.8+, stdlib only.
"""

from __future__ import annotations

import errno
import hmac
import select
import socket

from ansible_collections.ascend.cluster.plugins.module_utils._job.group.protocol import (
    MAX_LINE,
    MAX_UNJOINED_BYTES,
    READ_CHUNK,
    SEALED,
    BadMessage,
    GroupError,
    dump,
    parse_body,
    seal,
)


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
        body = dump(message)
        if self.key is None:
            raise GroupError("a message before the connection has its key")
        self.seq_out += 1
        self.send_raw(b"%s %s\n" % (seal(self.key, self.sends, self.seq_out, body), body))

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
        found = SEALED.fullmatch(line)
        if found is None:
            raise BadMessage("not a sealed message")
        if not hmac.compare_digest(found.group(1), seal(self.key, self.hears, self.seq_in + 1, found.group(2))):
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


def wait_for(channel: Channel, timeout: float, write: bool = False) -> tuple:
    """Wait up to ``timeout`` for ``channel``: ``(readable, writable)``; writable is asked for only with ``write``. A
    closed channel is neither (its descriptor is gone)."""
    if channel.closed:
        return False, False
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
