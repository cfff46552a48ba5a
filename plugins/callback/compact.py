# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Stdout callback ``ascend.cluster.compact``: stages, progress, failures and the summaries, one line each."""

from __future__ import annotations

DOCUMENTATION = r"""
name: compact
type: stdout
short_description: Plays, changes, failures and the ascend.cluster summaries - no per-host, per-item or skipped lines
version_added: 0.1.0
author:
  - ascend.cluster contributors (!UNKNOWN)
description:
  - A stdout callback for the playbooks of this collection (and any other). It prints one line per play, one line per
    task that changed something or failed (the hosts counted, not listed one per line), the messages of
    C(ansible.builtin.debug) and C(ascend.cluster.show) tasks (the tables and summary lines the roles print) as plain
    text, the progress lines of the training watch, warnings, and at the end the summary lines the roles record with C(ansible.builtin.set_stats)
    (every custom stat whose name starts with C(ascend_) and that has a C(line)) and one line of totals.
  - A failed task prints its message once, without the result's other keys; a message several hosts failed with is
    printed for the first of them only (the last line names every failed host). Skipped results, per-item lines and C(ok) results of tasks that are not
    C(debug) or C(ascend.cluster.show) are not printed.
  - Its output does not depend on C(ANSIBLE_DISPLAY_OK_HOSTS) or C(ANSIBLE_DISPLAY_SKIPPED_HOSTS), and grows with
    the number of tasks, not of hosts.
  - Enable it with C(stdout_callback = ascend.cluster.compact) in the C([defaults]) section of C(ansible.cfg), or
    C(ANSIBLE_STDOUT_CALLBACK=ascend.cluster.compact); see docs/summaries.md.
options:
  show_ok_tasks:
    description: Also print one line for every task that ended C(ok) on all hosts (the stages of the run).
    type: bool
    default: false
    env:
      - name: ASCEND_COMPACT_SHOW_OK_TASKS
    ini:
      - section: ascend_compact
        key: show_ok_tasks
  max_message_chars:
    description: A failure message longer than this is cut, saying how much was left out (0 - never cut).
    type: int
    default: 4000
    env:
      - name: ASCEND_COMPACT_MAX_MESSAGE_CHARS
    ini:
      - section: ascend_compact
        key: max_message_chars
"""

from collections.abc import Mapping
from typing import Any

from ansible import constants as C
from ansible.plugins.callback import CallbackBase

# ansible.constants sets the colours from the configuration at import time (not visible to type checkers).
COLOR_OK = getattr(C, "COLOR_OK", "green")
COLOR_CHANGED = getattr(C, "COLOR_CHANGED", "yellow")
COLOR_ERROR = getattr(C, "COLOR_ERROR", "red")
COLOR_UNREACHABLE = getattr(C, "COLOR_UNREACHABLE", "bright red")
COLOR_SKIP = getattr(C, "COLOR_SKIP", "cyan")
# debug and this collection's show (the tables and summary lines of the roles): their msg is printed as text.
DEBUG_ACTIONS = frozenset(("debug", "ansible.builtin.debug", "ansible.legacy.debug", "ascend.cluster.show"))
STATS_PREFIX = "ascend_"


def _parts(result: Any) -> tuple[Any, Any, dict]:
    """(task, host, result dict) of a task result, on every supported ansible-core."""
    if hasattr(result, "task") and hasattr(result, "host") and isinstance(getattr(result, "result", None), Mapping):
        return result.task, result.host, result.result
    return result._task, result._host, result._result


def _lines(msg: Any) -> list[str]:
    if isinstance(msg, (list, tuple)):
        return [str(m) for m in msg]
    return str(msg).splitlines() or [""]


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "stdout"
    CALLBACK_NAME = "ascend.cluster.compact"

    def __init__(self) -> None:
        super().__init__()
        self._task: Any = None
        self._changed: list[str] = []
        self._ok: list[str] = []
        self._failed: dict[str, list[str]] = {}
        self._shown: set[str] = set()

    # ---- per task -------------------------------------------------------------------------

    def _flush(self) -> None:
        """One line for the task that just ended: what it changed (hosts counted), or its name when asked."""
        task = self._task
        if task is None:
            return
        name = task.get_name().strip()
        if self._changed:
            hosts = sorted(set(self._changed))
            self._display.display(f"  changed: {name} ({len(hosts)} host{'s' if len(hosts) != 1 else ''})", color=COLOR_CHANGED)
        elif self._ok and not self._failed and self.get_option("show_ok_tasks"):
            self._display.display(f"  ok: {name}", color=COLOR_OK)
        self._task = None
        self._changed, self._ok, self._failed, self._shown = [], [], {}, set()

    def v2_playbook_on_play_start(self, play: Any) -> None:
        self._flush()
        name = play.get_name().strip()
        self._display.display(f"PLAY {name}" if name else "PLAY")

    def v2_playbook_on_task_start(self, task: Any, is_conditional: bool) -> None:
        self._flush()
        self._task = task

    def v2_playbook_on_handler_task_start(self, task: Any) -> None:
        self._flush()
        self._task = task

    def v2_playbook_on_no_hosts_matched(self) -> None:
        self._display.display("skipping: no hosts matched", color=COLOR_SKIP)

    def _warnings(self, data: dict) -> None:
        self._handle_warnings(data)

    def v2_runner_on_ok(self, result: Any) -> None:
        task, host, data = _parts(result)
        self._warnings(data)
        if task.action in DEBUG_ACTIONS and "msg" in data:
            text = "\n".join(_lines(data["msg"]))
            if text not in self._shown:  # the same message from several hosts: once
                self._shown.add(text)
                self._display.display(text, color=COLOR_CHANGED if data.get("changed") else COLOR_OK)
        if data.get("changed"):
            self._changed.append(host.get_name())
        else:
            self._ok.append(host.get_name())

    def _message(self, data: Mapping[str, Any]) -> str:
        msg = data.get("msg")
        if not msg:
            for key in ("stderr", "stdout", "module_stderr", "module_stdout"):
                if data.get(key):
                    msg = str(data[key]).strip()
                    break
        text = "\n".join(_lines(msg if msg else "failed without a message"))
        limit = self.get_option("max_message_chars")
        if limit and len(text) > limit:
            text = text[:limit] + f"\n... ({len(text) - limit} more characters; -v shows the whole result)"
        return text

    def v2_runner_on_failed(self, result: Any, ignore_errors: bool = False) -> None:
        task, host, data = _parts(result)
        self._warnings(data)
        if self._display.verbosity >= 3 and hasattr(self, "_handle_exception"):
            self._handle_exception(data)
        if ignore_errors:
            self._ok.append(host.get_name())
            return
        text = self._message(data)
        hosts = self._failed.setdefault(text, [])
        hosts.append(host.get_name())
        if len(hosts) == 1:  # a later host with the same message adds nothing to read
            self._display.display(f"FAILED [{host.get_name()}] {task.get_name().strip()}: {text}", color=COLOR_ERROR)

    def v2_runner_on_unreachable(self, result: Any) -> None:
        task, host, data = _parts(result)
        self._display.display(f"UNREACHABLE [{host.get_name()}] {task.get_name().strip()}: {self._message(data)}", color=COLOR_UNREACHABLE)

    def v2_runner_on_skipped(self, result: Any) -> None:
        pass

    def v2_runner_item_on_ok(self, result: Any) -> None:
        task, dummy, data = _parts(result)
        self._warnings(data)
        if task.action in DEBUG_ACTIONS and "msg" in data:
            self._display.display("\n".join(_lines(data["msg"])))

    def v2_runner_item_on_failed(self, result: Any) -> None:
        task, host, data = _parts(result)
        self._warnings(data)
        item = self._get_item_label(data)
        self._display.display(f"FAILED [{host.get_name()}] {task.get_name().strip()} ({item}): {self._message(data)}", color=COLOR_ERROR)

    def v2_runner_item_on_skipped(self, result: Any) -> None:
        pass

    def v2_runner_retry(self, result: Any) -> None:
        pass

    def v2_on_file_diff(self, result: Any) -> None:
        task, dummy, data = _parts(result)
        if not getattr(task, "loop", None) and data.get("diff") and data.get("changed"):
            diff = self._get_diff(data["diff"])
            if diff:
                self._display.display(diff)

    # ---- the end ------------------------------------------------------------------------------

    def v2_playbook_on_stats(self, stats: Any) -> None:
        self._flush()
        custom = getattr(stats, "custom", {}) or {}
        lines = []
        for scope in custom.values():
            for name, value in sorted((scope or {}).items()):
                if str(name).startswith(STATS_PREFIX) and isinstance(value, Mapping) and value.get("line"):
                    lines.append(str(value["line"]))
        if lines:
            self._display.display("SUMMARY")
            for line in lines:
                self._display.display(f"  {line}", color=COLOR_ERROR if line.startswith(("FAILED", "STOPPED")) else COLOR_OK)
        hosts = sorted(stats.processed.keys())
        totals = {"ok": 0, "changed": 0, "failures": 0, "unreachable": 0, "skipped": 0}
        failed, unreachable = [], []
        for host in hosts:
            summary = stats.summarize(host)
            for key in totals:
                totals[key] += summary.get(key, 0)
            if summary.get("failures"):
                failed.append(host)
            if summary.get("unreachable"):
                unreachable.append(host)
        text = f"RECAP {len(hosts)} host(s): ok={totals['ok']} changed={totals['changed']} skipped={totals['skipped']}"
        if failed:
            text += f" failed: {', '.join(failed)}"
        if unreachable:
            text += f" unreachable: {', '.join(unreachable)}"
        self._display.display(text, color=COLOR_ERROR if failed or unreachable else COLOR_OK)
