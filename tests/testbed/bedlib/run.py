"""The one door to the outside: every command the bed runs goes through :func:`run`."""

from __future__ import annotations

import subprocess
from typing import Iterable, Sequence


class BedError(RuntimeError):
    """Something the operator has to look at; the message says what failed and what to do."""


def run(argv: Sequence[str], *, input_text: str | None = None, check: bool = True) -> subprocess.CompletedProcess:
    """Run ``argv`` (never through a shell); raise :class:`BedError` with its stderr on failure."""
    try:
        proc = subprocess.run(list(argv), input=input_text, capture_output=True, text=True, check=False)
    except FileNotFoundError as exc:
        raise BedError(f"{argv[0]} not found: install it (Debian: iproute2, util-linux, openssh-server)") from exc
    if check and proc.returncode != 0:
        raise BedError(f"`{' '.join(argv)}` failed (exit {proc.returncode}): {proc.stderr.strip() or proc.stdout.strip()}")
    return proc


def ip_batch(lines: Iterable[str], *, netns: str | None = None, force: bool = False) -> subprocess.CompletedProcess:
    """Run many ``ip`` commands in one process (``ip -batch``), optionally inside ``netns``."""
    argv = ["ip"]
    if netns:
        argv += ["-n", netns]
    if force:
        argv.append("-force")
    argv += ["-batch", "-"]
    return run(argv, input_text="".join(f"{line}\n" for line in lines), check=not force)


def in_netns(netns: str, argv: Sequence[str], *, check: bool = True) -> subprocess.CompletedProcess:
    """Run ``argv`` inside network namespace ``netns`` (a fresh mount namespace, real /etc)."""
    return run(["ip", "netns", "exec", netns, *argv], check=check)
