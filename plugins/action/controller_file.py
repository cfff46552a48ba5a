# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action controller_file: a small text file or a directory on the controller, written here (no connection, no module).

The file goes through ``module_utils._host.text_file`` (plan, then atomic write), as ``rank_table_file`` writes on a
server; see the module file for the options.
"""

from __future__ import annotations

import os

from ansible_collections.ascend.cluster.plugins.module_utils._host.text_file import apply_text_file
from ansible_collections.ascend.cluster.plugins.plugin_utils._action import Action

ARGUMENT_SPEC = {"path": {"type": "path", "required": True}, "content": {"type": "str"}, "mode": {"type": "str"}}


def make_directory(path: str, mode: int, check_mode: bool) -> list:
    """The steps that make ``path`` a directory with ``mode`` (taken unless ``check_mode``)."""
    if not os.path.isdir(path):
        if not check_mode:
            os.makedirs(path, 0o755, exist_ok=True)
            os.chmod(path, mode)
        return ["mkdir"]
    if os.stat(path).st_mode & 0o7777 != mode:
        if not check_mode:
            os.chmod(path, mode)
        return ["chmod"]
    return []


def controller_file(args: dict, check_mode: bool) -> dict:
    """Write ``args["content"]`` to ``args["path"]`` (or make it a directory); the task's result."""
    path = os.path.expanduser(args["path"])
    directory = args.get("content") is None
    try:
        mode = int(args.get("mode") or ("0755" if directory else "0644"), 8)
    except ValueError:
        return {"failed": True, "msg": f"mode {args['mode']!r} is not octal permission bits: give it as 0644"}
    try:
        steps = (
            make_directory(path, mode, check_mode)
            if directory
            else apply_text_file(path, args["content"], mode, check_mode=check_mode)["steps"]
        )
    except OSError as exc:
        return {"failed": True, "msg": f"cannot write {path} on the controller: {exc}"}
    return {"changed": bool(steps), "path": path, "steps": steps}


class ActionModule(Action):
    """Controller-only ``ascend.cluster.controller_file``: no connection, the file written by this worker."""

    _requires_connection = False

    ARGUMENT_SPEC = ARGUMENT_SPEC

    def act(self, args: dict, own: dict, task_vars: dict) -> dict:
        return controller_file(args, bool(self._task.check_mode))
