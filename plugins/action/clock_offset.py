# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action clock_offset: measure a server's wall-clock offset against the controller, in one task.

Reads the server's clock ``samples`` times with one cheap shell command each (``date +%s.%N``,
over the connection the play already holds: no module is transferred or run), timing each on the
controller, and keeps the reading with the smallest round trip (``plugin_utils._clock``). Then
judges the offset: a warning above ``warn_above`` seconds, a refusal above ``refuse_above``
unless ``allow``. The task never fails for the offset itself (the role prints every server's
offset first, then refuses naming all of them at once); it fails only when the clock cannot be read.
"""

from __future__ import annotations

import time
from typing import Any

from ansible.plugins.action import ActionBase

from ansible_collections.ascend.cluster.plugins.plugin_utils._clock import Sample, best_offset, judge

DATE = "date +%s.%N"
# Where date has no %N (it prints "1700000000.N"): the server's Python, which Ansible needs anyway.
PYTHON = "{python} -c 'import time; print(repr(time.time()))'"

ARGUMENT_SPEC = {
    "samples": {"type": "int", "default": 5},
    "warn_above": {"type": "float", "default": 1.0},
    "refuse_above": {"type": "float", "default": 30.0},
    "allow": {"type": "bool", "default": False},
    "server": {"type": "str"},
}


class ActionModule(ActionBase):
    """Controller-only ``ascend.cluster.clock_offset``; see the module docstring."""

    TRANSFERS_FILES = False
    _requires_connection = True
    _supports_check_mode = True

    def _read_clock(self, command: str) -> Sample:
        t_send = time.time()
        res = self._low_level_execute_command(command, sudoable=False)
        t_recv = time.time()
        out = (res.get("stdout") or "").strip()
        try:
            if res.get("rc") != 0:
                raise ValueError(f"exit code {res.get('rc')}")
            return Sample(t_send, float(out), t_recv)
        except ValueError as exc:
            raise ValueError(f"`{command}` gave {out!r} ({exc}; stderr {(res.get('stderr') or '').strip()!r})") from exc

    def run(self, tmp: Any = None, task_vars: dict | None = None) -> dict:
        result = super().run(tmp, task_vars)
        task_vars = task_vars or {}
        _spec, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        if args["samples"] < 1:
            return dict(result, failed=True, msg=f"samples must be 1 or more, not {args['samples']}")
        server = args["server"] or task_vars.get("inventory_hostname", "?")
        command = DATE
        samples = []
        try:
            for _reading in range(args["samples"]):
                try:
                    samples.append(self._read_clock(command))
                except ValueError:
                    if command != DATE:
                        raise
                    python = task_vars.get("ansible_python_interpreter") or "python3"
                    command = PYTHON.format(python=python)
                    samples.append(self._read_clock(command))
        except ValueError as exc:
            return dict(result, failed=True, msg=f"cannot read the clock of {server}: {exc}")
        measured = best_offset(samples)
        verdict = judge(server, measured, args["warn_above"], args["refuse_above"], args["allow"])
        if verdict.status == "warn":
            result.setdefault("warnings", []).append(verdict.msg)
        result.update(
            changed=False,
            server=server,
            offset=round(measured.offset, 4),
            uncertainty=round(measured.uncertainty, 4),
            rtt=round(measured.rtt, 4),
            samples=measured.samples,
            status=verdict.status,
            msg=verdict.msg,
        )
        return result
