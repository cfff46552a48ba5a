# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where CANN writes a process's plog, and reading one rank's plog lines (reference section 7).

A process's application log is ``<root>/debug/plog/plog-<pid>_<timestamp>.log`` (run-level logs under
``<root>/run/plog/``, CANN 5.x ``<root>/plog/``), ``<root>`` being ``$ASCEND_PROCESS_LOG_PATH`` or else
``$HOME/ascend/log``. The rank's environment is the one its runner wrote to ``env.log``; its processes are the
command's and those its runner saw in the command's process tree (``pids`` in its ``state.json``), so that the plog of
``python`` under ``bash train.sh``, or of a worker under torchrun or msrun, is found.

Runs on target hosts: Python 3.8+, stdlib only.
"""

from __future__ import annotations

import glob
import os

SUBDIRS = (os.path.join("debug", "plog"), os.path.join("run", "plog"), "plog")
MAX_BYTES = 4 * 1024 * 1024  # of each plog file: a real one can grow large; the first error is near its start
LEVELS = ("[ERROR]", "[WARNING]")


def read_env_log(path: str) -> dict:
    """``KEY=VALUE`` lines of a rank's ``env.log`` as a dict ({} when missing)."""
    env = {}
    try:
        with open(path, errors="replace") as handle:
            for line in handle:
                key, sep, value = line.rstrip("\n").partition("=")
                if sep and key:
                    env[key] = value
    except OSError:
        pass
    return env


def plog_dirs(env: dict, extra: list | None = None) -> list:
    """The directories a process with ``env`` writes its plogs to, ``extra`` first, without repeats."""
    roots = []
    if env.get("ASCEND_PROCESS_LOG_PATH"):
        roots.append(env["ASCEND_PROCESS_LOG_PATH"])
    home = env.get("HOME") or os.path.expanduser("~")
    roots.append(os.path.join(home, "ascend", "log"))
    dirs = list(extra or [])
    for root in roots:
        for sub in SUBDIRS:
            path = os.path.join(root, sub)
            if path not in dirs:
                dirs.append(path)
    return dirs


def plog_files(pid: int, dirs: list) -> list:
    """Every ``plog-<pid>_*.log`` in ``dirs``, oldest name first per directory."""
    found = []
    for directory in dirs:
        found += sorted(glob.glob(os.path.join(glob.escape(directory), "plog-%d_*.log" % int(pid))))
    return found


def plog_lines(paths: list, max_lines: int = 200) -> list:
    """The first ``max_lines`` ERROR and WARNING lines of ``paths`` (the first error is what matters)."""
    lines: list = []
    for path in paths:
        try:
            with open(path, "rb") as handle:
                data = handle.read(MAX_BYTES).decode("utf-8", "replace")
        except OSError:
            continue
        for line in data.splitlines():
            if line.startswith(LEVELS):
                lines.append(line)
                if len(lines) >= max_lines:
                    return lines
    return lines


def rank_plog(pid: int | None, env: dict, extra: list | None = None, max_lines: int = 200, pids: list | None = None) -> dict:
    """``{"pid", "pids", "files", "lines"}`` of one rank's processes: the command's ``pid`` and the ``pids`` its runner
    saw in its process tree (a wrapper's children, a launcher's workers: ``state.json``); no files when none is known."""
    every = []
    for one in [pid] + list(pids or []):
        if one and int(one) not in every:
            every.append(int(one))
    paths: list = []
    directories = plog_dirs(env, extra)
    for one in every:
        paths += [path for path in plog_files(one, directories) if path not in paths]
    return {"pid": pid, "pids": every, "files": paths, "lines": plog_lines(paths, max_lines)}
