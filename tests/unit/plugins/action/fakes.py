"""A collection action plugin built around fakes: its task, connection and play context, and a module that answers."""

from __future__ import annotations

from types import ModuleType, SimpleNamespace
from typing import Any


def action_for(
    plugin_module: ModuleType,
    args: dict,
    *,
    transport: str = "ssh",
    address: str | None = "10.0.0.1",
    templar: Any = None,
    answer: dict | None = None,
) -> tuple[Any, list[dict[str, Any]]]:
    """``plugin_module``'s ActionModule for a task with ``args``, and the list its module calls go to (each answers ``answer``)."""
    calls: list[dict[str, Any]] = []
    task = SimpleNamespace(args=args, async_val=0, check_mode=False, action="ascend.cluster.fake", diff=False)
    plugin = plugin_module.ActionModule(
        task=task,
        connection=SimpleNamespace(transport=transport, _shell=SimpleNamespace(tmpdir=None)),
        play_context=SimpleNamespace(remote_addr=address, check_mode=False),
        loader=None,
        templar=templar,
        shared_loader_obj=None,
    )

    def execute_module(module_name: str, module_args: dict, task_vars: dict, wrap_async: bool = False) -> dict:
        calls.append({"module_name": module_name, "module_args": module_args})
        return dict(answer or {})

    plugin._execute_module = execute_module
    return plugin, calls
