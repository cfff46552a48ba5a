# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Small text files on a target host: read, plan and write atomically with an explicit mode.

``plan_text_file`` is pure (what exists -> the steps still needed), so the modules that write a
file (``rank_table_file``; ``host_firewall`` for its sysctl file) decide, report and diff the same
way in check mode and for real. Runs on target hosts: Python 3.8+, stdlib only.
"""

from __future__ import annotations

import json
import os
import stat
import tempfile
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # types only: nothing here runs, so the 3.8 floor does not apply
    from typing import Any


def read_text(path: str) -> str | None:
    """The file's text, or None when it does not exist."""
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except FileNotFoundError:
        return None


def write_text_atomic(path: str, text: str, mode: int) -> None:
    """Write ``text`` to a temp file beside ``path`` with ``mode``, then rename it over ``path``."""
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", dir=os.path.dirname(path) or ".")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fchmod(handle.fileno(), mode)
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def file_state(path: str) -> dict[str, Any]:
    """What ``plan_text_file`` needs to know of ``path``: its directory, text and permission bits."""
    directory = os.path.dirname(path) or "."
    try:
        mode = stat.S_IMODE(os.stat(path).st_mode)
    except FileNotFoundError:
        mode = None
    return {"directory_exists": os.path.isdir(directory), "text": read_text(path) if mode is not None else None, "mode": mode}


def plan_text_file(state: dict[str, Any], text: str, mode: int) -> list[str]:
    """The steps that bring a file from ``state`` (``file_state``) to ``text`` with ``mode``, in order.

    ``mkdir`` (the directory is missing), ``write`` (missing or other text; the write sets the
    mode too), ``chmod`` (same text, other mode). No steps: nothing to do.
    """
    steps = [] if state.get("directory_exists") else ["mkdir"]
    if state.get("text") != text:
        steps.append("write")
    elif state.get("mode") != mode:
        steps.append("chmod")
    return steps


def apply_text_file(path: str, text: str, mode: int, check_mode: bool = False, directory_mode: int = 0o755) -> dict[str, Any]:
    """Bring ``path`` to ``text`` with ``mode`` (its directory made with ``directory_mode`` when missing).

    Returns ``{"steps", "before"}``: the steps taken (or, in check mode, that would be) and the text
    found before (None when the file did not exist). Raises OSError when a step fails.
    """
    state = file_state(path)
    steps = plan_text_file(state, text, mode)
    if steps and not check_mode:
        if "mkdir" in steps:
            os.makedirs(os.path.dirname(path), directory_mode, exist_ok=True)
        if "write" in steps:
            write_text_atomic(path, text, mode)
        elif "chmod" in steps:
            os.chmod(path, mode)
    return {"steps": steps, "before": state["text"]}


def json_file_matches(path: str, text: str) -> bool:
    """Whether ``path`` holds the JSON document ``text`` holds (read back from disk; False when missing or not JSON)."""
    found = read_text(path)
    return found is not None and json_matches(found.encode("utf-8"), text)


def json_matches(found: bytes, text: str) -> bool:
    """Whether the bytes ``found`` (a file's, as read) hold the JSON document ``text`` holds (False when not UTF-8 JSON).
    A caller that keeps a digest of the file takes it of these same bytes: a second read could see another file."""
    try:
        return bool(json.loads(found.decode("utf-8")) == json.loads(text))
    except ValueError:  # UnicodeDecodeError is one
        return False
