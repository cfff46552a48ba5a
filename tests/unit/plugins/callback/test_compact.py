"""The compact stdout callback (plugins/callback/compact.py) fed fake results: what it prints, line by line.

Its playbook tests count lines of whole runs; these pin each rule on its own: tables once per message,
changed tasks as one line with hosts counted, ok and skipped tasks silent, a failure once per message,
the summary lines of the ascend_* custom stats, one RECAP line.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from ansible_collections.ascend.cluster.plugins.callback.compact import CallbackModule


class Display:
    verbosity = 0

    def __init__(self) -> None:
        self.lines: list[str] = []

    def display(self, msg: str, color: Any = None, **kwargs: Any) -> None:
        self.lines.extend(str(msg).splitlines())

    def warning(self, msg: str, **kwargs: Any) -> None:
        self.lines.append(f"[WARNING]: {msg}")

    def deprecated(self, *args: Any, **kwargs: Any) -> None:
        pass


def task(name: str, action: str = "ansible.builtin.copy") -> Any:
    return SimpleNamespace(get_name=lambda: name, action=action, loop=None)


def result(task_: Any, host: str, **data: Any) -> Any:
    return SimpleNamespace(task=task_, host=SimpleNamespace(get_name=lambda: host), result=data)


@pytest.fixture
def callback() -> CallbackModule:
    cb = CallbackModule()
    cb._display = Display()  # type: ignore[assignment]
    options: dict[str, Any] = {"show_ok_tasks": False, "max_message_chars": 40}
    cb.get_option = lambda name, *rest: options[name]  # type: ignore[method-assign]
    return cb


def play(cb: CallbackModule, *events: tuple[str, Any]) -> list[str]:
    for kind, value in events:
        getattr(cb, kind)(*value) if isinstance(value, tuple) else getattr(cb, kind)(value)
    cb._flush()
    return cb._display.lines  # type: ignore[attr-defined]


def test_tables_once_changed_tasks_counted_ok_and_skipped_silent(callback):
    show = task("Show the ranks", "ascend.cluster.show")
    write = task("Write the rank table")
    read = task("Read the devices")
    lines = play(
        callback,
        ("v2_playbook_on_task_start", (read, False)),
        ("v2_runner_on_ok", result(read, "h1", changed=False)),
        ("v2_runner_on_skipped", result(read, "h2", skipped=True)),
        ("v2_playbook_on_task_start", (write, False)),
        ("v2_runner_on_ok", result(write, "h1", changed=True)),
        ("v2_runner_on_ok", result(write, "h2", changed=True)),
        ("v2_playbook_on_task_start", (show, False)),
        ("v2_runner_on_ok", result(show, "h1", changed=False, msg=["RANK  SERVER", "0     h1"])),
        ("v2_runner_on_ok", result(show, "h2", changed=False, msg=["RANK  SERVER", "0     h1"])),
    )
    assert lines == ["  changed: Write the rank table (2 hosts)", "RANK  SERVER", "0     h1"]


def test_a_failure_is_printed_once_per_message_and_cut_at_the_limit(callback):
    launch = task("Open the gate")
    lines = play(
        callback,
        ("v2_playbook_on_task_start", (launch, False)),
        ("v2_runner_on_failed", result(launch, "h1", msg="devices in use")),
        ("v2_runner_on_failed", result(launch, "h2", msg="devices in use")),
        ("v2_runner_on_failed", result(launch, "h3", msg="x" * 50)),
    )
    assert lines == [
        "FAILED [h1] Open the gate: devices in use",
        "FAILED [h3] Open the gate: " + "x" * 40,
        "... (10 more characters; -v shows the whole result)",
    ]


def test_the_end_prints_the_summary_lines_and_one_recap_line(callback):
    summaries = {"ascend_train": {"line": "train J: 16/16 ranks done in 3.1 s"}, "other": {"line": "not ours"}}
    counts = {
        "h1": {"ok": 10, "changed": 3, "failures": 0, "unreachable": 0, "skipped": 2},
        "h2": {"ok": 9, "changed": 3, "failures": 1, "unreachable": 0, "skipped": 2},
    }
    stats = SimpleNamespace(custom={"_run": summaries}, processed=dict.fromkeys(counts, 1), summarize=counts.__getitem__)
    callback.v2_playbook_on_stats(stats)
    assert callback._display.lines == [
        "SUMMARY",
        "  train J: 16/16 ranks done in 3.1 s",
        "RECAP 2 host(s): ok=19 changed=6 skipped=4 failed: h2",
    ]
