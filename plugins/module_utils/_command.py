# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Run one external command (``hccn_tool``, ``npu-smi``, the firewall tools) with a real timeout:
``run(argv, timeout, env)``.

Why not ``AnsibleModule.run_command``: it has no timeout (a hung driver call would hang the
module; we used to wrap every call in coreutils ``timeout``, one more process per call), its
select loop can lose a late child's output on a busy host (ansible/ansible#51393), and it
costs ~2.5 ms of Python per call, which adds up over the 80+ concurrent calls of one 16-device
read. This is the same safe subset: an argument list (never a shell), no stdin, the child in
its own session so that a timeout ends everything it started.

Runs on target hosts: Python 3.8+, stdlib only. Safe to call from worker threads.
"""

from __future__ import annotations

import os
import signal
import subprocess
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # types only: nothing here runs, so the 3.8 floor does not apply
    from typing import Callable, Protocol

    # ``run`` itself, or a fake with its shape: ``runner(argv, timeout=...) -> (rc, stdout, stderr)``.
    Runner = Callable[..., tuple[int, str, str]]

    class BinFinder(Protocol):
        """What the tool clients need of an AnsibleModule (tests hand in a fake one)."""

        def get_bin_path(self, arg: str, /, required: bool = ..., opt_dirs: list[str] | None = ...) -> str | None: ...


# Seconds a driver tool call (hccn_tool, npu-smi) may take by default.
DEFAULT_TIMEOUT = 30
# rc of a call stopped at its timeout (the value coreutils `timeout` uses).
TIMEOUT_RC = 124
# Seconds to collect what a stopped call had printed.
_DRAIN_S = 5


def _text(data: bytes | None) -> str:
    return (data or b"").decode("utf-8", errors="replace")


def run(argv: list, timeout: float | None = None, env: dict | None = None) -> tuple[int, str, str]:
    """``(rc, stdout, stderr)`` of ``argv``; rc ``TIMEOUT_RC`` when it had to be stopped (with
    what it had printed until then: callers say what the timeout means).

    ``env`` adds to (or overrides in) this process's environment for the child, e.g.
    ``{"LC_ALL": "C"}`` for output that is parsed.

    Raises OSError when the binary cannot be started (missing, not executable).
    """
    if not isinstance(argv, list):
        raise TypeError("argv must be an argument list, never a shell string")
    # Popen, not module.run_command: the child gets its own session so a timeout can kill its whole group.
    proc = subprocess.Popen(  # pylint: disable=ansible-bad-function
        [str(a) for a in argv],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        close_fds=True,
        start_new_session=True,
        env=dict(os.environ, **env) if env else None,
    )
    try:
        out, err = proc.communicate(timeout=timeout or None)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass
        try:
            out, err = proc.communicate(timeout=_DRAIN_S)
        except subprocess.TimeoutExpired:
            # something that left the session still holds the pipes: do not wait for it
            proc.kill()
            proc.wait()
            out, err = b"", b""
        return TIMEOUT_RC, _text(out), _text(err)
    return proc.returncode, _text(out), _text(err)


class ToolClient:
    """What every client of one external tool holds (``HccnTool``, ``NpuSmi``): the module that finds binaries,
    the binary, the time-out of each call, and the runner - :func:`run`, or a fake with its shape in tests."""

    def __init__(self, module: BinFinder, binary: str, timeout: float = DEFAULT_TIMEOUT, runner: Runner | None = None) -> None:
        self.module = module
        self.binary = binary
        self.timeout = timeout
        self.runner = runner or run
