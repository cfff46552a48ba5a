# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""One long-lived POSIX shell on a server, for the watch's probes: a command is a line written, its answer read back.

Each probe used to be one ``ssh`` command (Ansible's ``_low_level_execute_command``): a process started on the
controller every ``poll_interval`` per server; a watched job cost 0.046-0.085 CPU-s per server per second, 0.014-0.025
with a session (``bench/bench_watch.py``, docs/benchmarks.md session 10). A session starts one process for the whole
watch: ``ssh <the task's options> <host> /bin/sh`` (multiplexed over the connection Ansible already
holds: same user, key, port and ControlPath) or, for the local connection, ``/bin/sh``. Each command runs in a
subshell (so that an ``exit`` in it cannot end the session) and is followed by a marker line the reader waits for.

A session that cannot be made (another connection type, ``become``, a password) is not made: the caller probes as
before. A session whose shell has gone (the connection dropped, the server died) raises AnsibleConnectionFailure;
the caller counts the miss and makes a new session for the next probe - or, when the session never answered at
all (something in this connection's set-up it does not reproduce), probes as before from then on.
"""

from __future__ import annotations

import os
import signal
import subprocess
from typing import Any

from ansible.errors import AnsibleConnectionFailure
from ansible.module_utils.common.text.converters import to_text

SHELL = "/bin/sh"


def session_argv(connection: Any) -> list[str] | None:
    """The argv that opens ``connection``'s host's shell, or None where a session does not apply (then probe as before)."""
    if getattr(connection, "become", None) is not None:
        return None  # the probes would need the become plugin's wrapping (and its prompt): keep one command each
    transport = str(getattr(connection, "transport", "") or "")
    if transport in ("local", "ansible.builtin.local"):
        return [SHELL]
    if transport not in ("ssh", "ansible.builtin.ssh"):
        return None
    try:
        if connection.get_option("password") or connection._play_context.password:  # pylint: disable=protected-access
            return None  # sshpass reads the password from a pipe the ssh plugin feeds in its own run: not ours
        host = connection.get_option("host") or connection._play_context.remote_addr  # pylint: disable=protected-access
        executable = connection.get_option("ssh_executable")
        argv = [to_text(part) for part in connection._build_command(executable, "ssh", host, SHELL)]  # pylint: disable=protected-access
    except Exception:  # pylint: disable=broad-except  # whatever this ssh plugin lacks: probe as before
        return None
    return argv if argv and argv[0] == to_text(executable) else None  # a wrapper in front (sshpass, ...): probe as before


class ShellSession:
    """A shell started once; :meth:`run` writes a command and returns its standard output (stderr is dropped)."""

    def __init__(self, argv: list[str]) -> None:
        self.argv = list(argv)
        self._count = 0
        self.answered = 0  # commands answered: a session that never answered may not work here at all
        try:
            self._proc = subprocess.Popen(  # pylint: disable=consider-using-with  # closed by close()
                self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True
            )
        except OSError as exc:
            raise AnsibleConnectionFailure(f"cannot start {self.argv[0]}: {exc}") from exc

    @property
    def pid(self) -> int:
        return self._proc.pid

    def run(self, command: str) -> str:
        """``command``'s stdout (text); AnsibleConnectionFailure when the shell has gone."""
        self._count += 1
        marker = b"\n__ascend_session_%d_%d__\n" % (os.getpid(), self._count)
        stdin, stdout = self._proc.stdin, self._proc.stdout
        if stdin is None or stdout is None:  # both are pipes (Popen above); for the type checker
            raise AnsibleConnectionFailure(f"the shell session ({self.argv[0]}) has no pipes")
        try:
            stdin.write(b"( %s\n) </dev/null\nprintf '%s'\n" % (command.encode(), marker.replace(b"\n", b"\\n")))
            stdin.flush()
            answer = b""
            while not answer.endswith(marker):
                chunk = os.read(stdout.fileno(), 65536)
                if not chunk:
                    raise AnsibleConnectionFailure(f"the shell session ({self.argv[0]}) ended")
                answer += chunk
        except OSError as exc:
            raise AnsibleConnectionFailure(f"the shell session ({self.argv[0]}) failed: {exc}") from exc
        self.answered += 1
        return to_text(answer[: -len(marker)], errors="surrogate_or_strict")

    def close(self) -> None:
        """End the shell at once: stdin closed, then TERM (KILL after 0.5 s) to its whole process group - the shell and a
        command still running in it, which holds the answer pipe open too - so that a probe still reading gets EOF.
        No error when it has gone already."""
        try:
            if self._proc.stdin is not None:
                self._proc.stdin.close()
        except OSError:
            pass
        # only while the shell itself is alive: its pid then names its group and cannot belong to anyone else
        if self._proc.poll() is not None or not self._signal_group(signal.SIGTERM):
            return
        try:
            self._proc.wait(timeout=0.5)
        except subprocess.TimeoutExpired:
            self._signal_group(signal.SIGKILL)
            self._proc.wait()

    def _signal_group(self, signum: int) -> bool:
        """``signum`` to the shell's process group (its own: started with start_new_session); False when it has gone."""
        try:
            os.killpg(self._proc.pid, signum)
        except OSError:
            return False
        return True
