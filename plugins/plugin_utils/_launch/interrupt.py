# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""An operator's Ctrl-C (or a SIGTERM) to ``ansible-playbook``, as an action plugin sees it.

Ansible runs each task in a worker process of its own session (setsid), so a terminal's Ctrl-C
reaches only the main process. Its task queue manager forwards that SIGINT (and a SIGTERM) to every
live worker, resets its own handler to the default, raises KeyboardInterrupt ("User interrupted
execution", exit code 99), SIGTERMs the workers in its clean-up and then waits for them to exit.
A second Ctrl-C therefore kills the main process and reaches no worker: a worker sees it only as
its parent dying. After the first one the main process no longer reads the workers' display
queue, and a worker's stdout and stderr are /dev/null: a worker that wants to be heard writes to
the main process's stderr, reopened through ``/proc/<parent>/fd/2`` (Linux controllers; elsewhere
it falls back to Display, which may be lost).

:class:`Guard` turns those signals into an :class:`Interrupted` exception in the action's own code
(the action runs in the worker's main thread), once: later signals are only counted. Used by
``training_watch`` (stop or leave the job) and by the launch's staging tasks (release the runners, ``_launch.staging``).
"""

from __future__ import annotations

import os
import pwd
import signal
import time
from typing import Any

from ansible.utils.display import Display

display = Display()

SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Interrupted(Exception):
    """The controller was interrupted: ``signum`` is SIGINT (Ctrl-C) or SIGTERM."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def controller_user() -> str:
    """Who runs ansible-playbook: ``$USER``, else the name of the process's uid (never "unknown" on a real system)."""
    name = os.environ.get("USER")
    if name:
        return name
    try:
        return pwd.getpwuid(os.getuid()).pw_name
    except KeyError:
        return f"uid {os.getuid()}"


def cause(signum: int) -> str:
    """How the operator would name the interruption."""
    return "Ctrl-C on the controller" if signum == signal.SIGINT else "SIGTERM to the controller"


class Guard:
    """Context manager: SIGINT/SIGTERM raise :class:`Interrupted` once; the previous handlers come back on exit."""

    def __init__(self) -> None:
        self.parent = os.getppid()
        self.received: list = []
        self._previous: dict = {}
        self._out: int | None = None

    def __enter__(self) -> Guard:
        for signum in SIGNALS:
            self._previous[signum] = signal.signal(signum, self._handler)
        # Opened now, while the main process surely lives: on SIGTERM it forwards the signal and kills itself at once,
        # so its stderr could not be reopened later; held open, the terminal or pipe still takes what this worker says.
        self._open_output()
        return self

    def __exit__(self, *_exc: Any) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)
        if self._out is not None:
            os.close(self._out)
            self._out = None

    def _handler(self, signum: int, _frame: Any) -> None:
        self.received.append(signum)
        if len(self.received) == 1:
            if self._out is None:
                self._open_output()
            raise Interrupted(signum)

    def _open_output(self) -> None:
        for fd in (2, 1):
            try:
                self._out = os.open(f"/proc/{self.parent}/fd/{fd}", os.O_WRONLY | os.O_APPEND | os.O_NOCTTY)
                return
            except OSError:
                continue

    def parent_gone(self) -> bool:
        """True once the main ansible-playbook process has died (a second Ctrl-C, kill -9)."""
        return os.getppid() != self.parent

    def wait_for_parent_death(self, seconds: float) -> bool:
        """Wait up to ``seconds`` for the main process to die; True when it did."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if self.parent_gone():
                return True
            time.sleep(0.02)
        return self.parent_gone()

    def say(self, line: str) -> None:
        """Tell the operator ``line`` (one line), on the main process's stderr when it can be reopened."""
        if self._out is None:
            display.display(line, stderr=True)
            return
        try:
            os.write(self._out, (line.rstrip("\n") + "\n").encode("utf-8", "replace"))
        except OSError:
            pass
