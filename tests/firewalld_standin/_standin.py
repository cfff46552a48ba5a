# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""State shared by the firewalld stand-ins ``firewall-cmd`` and ``systemctl`` (see README.md).

The state lives in ``$FIREWALLD_STANDIN_DIR`` (default ``/etc/firewalld-standin``; inside a test
bed host ``/etc`` is the host's own overlay): ``state.json`` and ``calls.log``, one line per call,
so tests can assert exactly which commands the role ran.
"""

from __future__ import annotations

import json
import os
import sys

DEFAULT_DIR = "/etc/firewalld-standin"
DEFAULT_STATE = {
    "installed": True,
    "active": True,
    "enabled": True,
    "default_zone": "public",
    "permanent": {"public": []},
    "runtime": {"public": []},
}


def state_dir() -> str:
    return os.environ.get("FIREWALLD_STANDIN_DIR", DEFAULT_DIR)


def load() -> dict:
    path = os.path.join(state_dir(), "state.json")
    try:
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)
    except FileNotFoundError:
        return json.loads(json.dumps(DEFAULT_STATE))


def save(state: dict) -> None:
    os.makedirs(state_dir(), exist_ok=True)
    path = os.path.join(state_dir(), "state.json")
    with open(path + ".tmp", "w", encoding="utf-8") as fh:
        json.dump(state, fh, indent=1, sort_keys=True)
    os.replace(path + ".tmp", path)


def record(name: str, argv: list) -> None:
    os.makedirs(state_dir(), exist_ok=True)
    with open(os.path.join(state_dir(), "calls.log"), "a", encoding="utf-8") as fh:
        fh.write(" ".join([name] + argv) + "\n")


def out(text: str, code: int = 0, err: bool = False) -> None:
    if text:
        (sys.stderr if err else sys.stdout).write(text + "\n")
    sys.exit(code)
