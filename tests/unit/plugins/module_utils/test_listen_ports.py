"""Which TCP ports are listened on, and by whom (the pre-flight's port check)."""

from __future__ import annotations

import os
import socket

from ansible_collections.ascend.cluster.plugins.module_utils._host import listen_ports as lp

# /proc/net/tcp as the kernel prints it: a LISTEN socket on 0.0.0.0:60003 (0xEA63), one on
# 127.0.0.1:29500 (0x733C), and an ESTABLISHED connection from local port 60005 (not a listener).
PROC_NET_TCP = """\
  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000:EA63 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 41234 1 0000000000000000 100 0 0 10 0
   1: 0100007F:733C 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 41235 1 0000000000000000 100 0 0 10 0
   2: 0100007F:EA65 0100007F:0016 01 00000000:00000000 02:000A7B2C 00000000     0        0 41236 2 0000000000000000 20 4 30 10 -1
"""


def test_parse_listening_takes_listen_rows_only():
    assert lp.parse_listening(PROC_NET_TCP) == {60003: "41234", 29500: "41235"}


def test_parse_listening_skips_what_it_cannot_read():
    assert lp.parse_listening("header\n   0: garbage\n   1: 00000000:ZZZZ 00000000:0000 0A a b c d e 9 f\n") == {}


def test_ports_in_use_names_this_process(tmp_path):
    table = tmp_path / "tcp"
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(1)
        port = sock.getsockname()[1]
        inode = str(os.fstat(sock.fileno()).st_ino)
        table.write_text(PROC_NET_TCP.replace("41234", inode).replace(":EA63", ":%04X" % port))
        with open(f"/proc/{os.getpid()}/comm") as handle:
            name = handle.read().strip()
        assert lp.ports_in_use([port, 29500, 29501], tables=(str(table),)) == {port: f"pid {os.getpid()} ({name})", 29500: "a socket"}
        # the real tables find the same listener
        assert lp.ports_in_use([port])[port] == f"pid {os.getpid()} ({name})"


def test_ports_in_use_with_no_table_is_empty(tmp_path):
    assert lp.ports_in_use([60000], tables=(str(tmp_path / "missing"),)) == {}


def test_a_listener_gone_while_it_is_looked_at_is_not_in_the_way(tmp_path, monkeypatch):
    """A job's coordinator that ends while the pre-flight reads: its socket is listed with no process holding it. It is
    looked at once more after a moment; gone then, it is not a port in use (it was refused as "a socket" before)."""
    table = tmp_path / "tcp"
    table.write_text(PROC_NET_TCP)  # 60003 and 29500 listen; no process of this test holds their inodes
    slept: list = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        table.write_text(PROC_NET_TCP.replace(" 0A ", " 07 ", 1))  # 60003's listener closed meanwhile (07: CLOSE)

    monkeypatch.setattr(lp.time, "sleep", sleep)
    assert lp.ports_in_use([60003, 29500], tables=(str(table),)) == {29500: "a socket"}
    assert slept == [lp.UNOWNED_SETTLE_S]
    slept.clear()
    assert lp.ports_in_use([29500], tables=(str(table),), settle=0) == {29500: "a socket"} and slept == []
