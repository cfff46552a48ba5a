"""One simulated server: its files, its sshd (started inside its namespaces), its processes."""

from __future__ import annotations

import os
import signal
import socket
import struct
import subprocess
import time
from pathlib import Path

from . import files
from .layout import SSH_PORT, Layout
from .run import BedError, run


def _write(path: Path, text: str, mode: int = 0o644) -> None:
    path.write_text(text)
    path.chmod(mode)


def keygen(path: Path, comment: str) -> None:
    if not path.exists():
        run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", str(path)])


def prepare(layout: Layout, host: str, repo: Path, with_sim: bool) -> str:
    """Create the host's directory tree; return its public host key line."""
    d = layout.host_dir(host)
    for sub in ("etc.upper", "etc.work", "bin.upper", "bin.work"):
        (d / sub).mkdir(parents=True, exist_ok=True)
    ssh_dir = d / "root" / ".ssh"
    ssh_dir.mkdir(parents=True, exist_ok=True)
    (d / "root").chmod(0o700)
    ssh_dir.chmod(0o700)
    _write(ssh_dir / "authorized_keys", Path(f"{layout.client_key}.pub").read_text(), 0o600)
    keygen(d / "ssh_host_ed25519_key", f"{layout.prefix}-{host}")
    _write(d / "sshd_config", files.sshd_config(layout, host, 0, _code_cache()), 0o600)
    # Seen through the /etc overlay: written into its upper dir before it is mounted.
    _write(d / "etc.upper" / "hostname", f"{host}\n")
    _write(d / "etc.upper" / "hosts", files.etc_hosts(layout))
    _write(d / "etc.upper" / "resolv.conf", files.resolv_conf(layout))
    _write(d / "start.sh", files.start_script(layout, host, repo, with_sim), 0o700)
    return (d / "ssh_host_ed25519_key.pub").read_text().strip()


def start(layout: Layout, host: str) -> subprocess.Popen:
    """Launch the host: netns -> new mount+UTS namespaces -> start.sh -> exec sshd.

    ``ip netns exec`` and ``unshare`` exec (no fork), so the returned PID ends up being sshd's.
    """
    d = layout.host_dir(host)
    log = open(d / "host.log", "ab")
    try:
        return subprocess.Popen(
            [
                "ip",
                "netns",
                "exec",
                layout.host_netns(host),
                "unshare",
                "--mount",
                "--uts",
                "--propagation",
                "private",
                "/bin/sh",
                str(d / "start.sh"),
            ],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            close_fds=True,
        )
    finally:
        log.close()


def _listen_pattern(ip: str) -> str:
    """How ``ip:22`` in LISTEN state appears in /proc/PID/net/tcp."""
    return "%08X:%04X" % (struct.unpack("<I", socket.inet_aton(ip))[0], SSH_PORT)


def listening(pid: int, ip: str) -> bool:
    """Does a socket in ``pid``'s network namespace listen on ``ip``:22?"""
    try:
        rows = Path(f"/proc/{pid}/net/tcp").read_text().splitlines()[1:]
    except OSError:
        return False
    want = _listen_pattern(ip)
    return any(r.split()[1] == want and r.split()[3] == "0A" for r in rows)


def wait_ready(layout: Layout, procs: dict[str, subprocess.Popen], timeout: float = 60.0) -> None:
    """Wait until every host's sshd listens; fail with the host's log if one died."""
    pending = dict(procs)
    deadline = time.monotonic() + timeout
    while pending:
        for host, proc in list(pending.items()):
            if proc.poll() is not None:
                log = (layout.host_dir(host) / "host.log").read_text(errors="replace")
                raise BedError(f"host {host} failed to start (exit {proc.returncode}); its log:\n{log[-3000:]}")
            if listening(proc.pid, str(layout.mgmt_ip(host))):
                del pending[host]
        if pending and time.monotonic() > deadline:
            raise BedError(f"sshd of {', '.join(pending)} not listening after {timeout:.0f}s; see {layout.state_dir}/*/host.log")
        if pending:
            time.sleep(0.05)


def is_our_sshd(pid: int, layout: Layout, host: str) -> bool:
    """True when ``pid`` still is the sshd started for ``host`` (not a recycled PID)."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
    # sshd retitles itself ("sshd: /usr/sbin/sshd -D -e -f <config> [listener] ..."), so
    # look for the host's own config path anywhere in it.
    return b"sshd" in cmdline and str(layout.host_dir(host) / "sshd_config").encode() in cmdline


def clock_offset(layout: Layout, host: str) -> int:
    """The offset ``set_clock`` gave ``host`` (0: real time)."""
    try:
        return int((layout.host_dir(host) / "clock_offset").read_text())
    except FileNotFoundError:
        return 0


def set_clock(layout: Layout, host: str, pid: int, offset: int) -> None:
    """Run every SSH session opened on ``host`` from now on (and all it starts) ``offset`` seconds off (0: real time).

    A time namespace cannot shift CLOCK_REALTIME, so libfaketime does it, through the sessions'
    environment (``SetEnv`` in the host's sshd_config; ``bed.py exec`` adds it too). Not through
    ``/etc/ld.so.preload``: sshd's pre-authentication child runs under a seccomp filter that kills it
    (SIGSYS) when libfaketime is loaded there. sshd re-reads its config on SIGHUP (same PID); the
    controller's ControlPersist connections are closed, since a session keeps the environment of the
    connection it came through.
    """
    if offset and not Path(files.FAKETIME_LIB).exists():
        raise BedError(f"{files.FAKETIME_LIB} is missing: apt-get install libfaketime")
    d = layout.host_dir(host)
    if offset:
        make_faketime_shared(layout, host)
    _write(d / "sshd_config", files.sshd_config(layout, host, offset, _code_cache()), 0o600)
    _write(d / "clock_offset", f"{offset}\n")
    log = d / "host.log"
    started = log.read_text(errors="replace").count("Server listening on")
    _signal([pid], signal.SIGHUP)
    deadline = time.monotonic() + 10
    while log.read_text(errors="replace").count("Server listening on") <= started or not listening(pid, str(layout.mgmt_ip(host))):
        if time.monotonic() > deadline:
            raise BedError(f"sshd of {host} did not come back after SIGHUP; see {log}")
        time.sleep(0.05)
    for socket_path in layout.control_path_dir.glob("*"):
        run(["ssh", "-o", f"ControlPath={socket_path}", "-O", "exit", host], check=False)


SHM_DIR = Path("/dev/shm")  # where glibc keeps POSIX semaphores (sem.NAME) and shared memory (NAME)
FAKETIME_SHM_SIZE = 4096  # libfaketime maps its struct ft_shared_s (tens of bytes) from the start


def _faketime_paths(layout: Layout, host: str) -> tuple[Path, Path]:
    sem, shm = (name.lstrip("/") for name in files.faketime_shared(layout, host).split())
    return SHM_DIR / f"sem.{sem}", SHM_DIR / shm


def make_faketime_shared(layout: Layout, host: str) -> None:
    """The host's libfaketime semaphore (value 1: a mutex) and zeroed shared memory, kept until ``remove_faketime_shared``.

    No process on the host is their maker, so none removes them when it exits (files.faketime_env says why).
    """
    # CPython's named POSIX semaphore (sem_open with O_CREAT | O_EXCL); typeshed has no stub for it
    import _multiprocessing  # type: ignore[import-not-found]

    sem_path, shm_path = _faketime_paths(layout, host)
    if not sem_path.exists():
        try:
            _multiprocessing.SemLock(1, 1, 1, "/" + sem_path.name[len("sem.") :], False)  # kind 1: a counting semaphore
        except FileExistsError:
            pass
    if not shm_path.exists():
        _write(shm_path, "\0" * FAKETIME_SHM_SIZE, 0o600)


def remove_faketime_shared(layout: Layout, host: str) -> None:
    for path in _faketime_paths(layout, host):
        path.unlink(missing_ok=True)


def netns_pids(netns: str) -> list[int]:
    proc = run(["ip", "netns", "pids", netns], check=False)
    return [int(p) for p in proc.stdout.split()] if proc.returncode == 0 else []


def _signal(pids: list[int], sig: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


def stop(layout: Layout, host: str, pid: int | None, timeout: float = 5.0) -> None:
    """End the host's recorded sshd, then whatever still runs in its netns (sessions, exec)."""
    if pid and is_our_sshd(pid, layout, host):
        _signal([pid], signal.SIGTERM)
    netns = layout.host_netns(host)
    deadline = time.monotonic() + timeout
    sig = signal.SIGTERM
    while True:
        pids = [p for p in netns_pids(netns) if p != os.getpid()]
        if pid and is_our_sshd(pid, layout, host):
            pids.append(pid)
        if not pids:
            return
        if time.monotonic() > deadline:
            if sig == signal.SIGKILL:
                raise BedError(f"processes {pids} in {netns} survive SIGKILL; see `ip netns pids {netns}`")
            sig, deadline = signal.SIGKILL, time.monotonic() + timeout
        _signal(pids, sig)
        time.sleep(0.05)


def _code_cache() -> str:
    """The modules' compile cache the tests named (tests/conftest.py), for the host's sessions; none outside them."""
    return os.environ.get("ASCEND_MODULE_CODE_CACHE", "")
