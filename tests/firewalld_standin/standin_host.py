"""Install the firewalld stand-in into one test bed host, drive and inspect it, remove it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.firewalld_standin._standin import DEFAULT_DIR, DEFAULT_STATE
from tests.testbed.harness import Bed

HERE = Path(__file__).resolve().parent
TOOLS = ("firewall-cmd", "systemctl")
STATE_DIR = DEFAULT_DIR  # the host's own overlay of /etc: the stand-ins' default directory


def install(bed: Bed, host: str, **state: Any) -> None:
    """Link the stand-ins into ``host``'s own /usr/local/bin and seed their state (defaults: running, enabled)."""
    for tool in TOOLS:
        bed.exec(host, "ln", "-sfn", str(HERE / tool), f"/usr/local/bin/{tool}")  # shell wrappers, see README
    seeded = {**json.loads(json.dumps(DEFAULT_STATE)), **state}  # the stand-ins' own first state, as they would seed it
    bed.exec(host, "rm", "-rf", STATE_DIR)
    bed.exec(host, "mkdir", "-p", STATE_DIR)
    bed.exec(host, "python3", "-c", "import sys; open(sys.argv[1], 'w').write(sys.argv[2])", f"{STATE_DIR}/state.json", json.dumps(seeded))


def state(bed: Bed, host: str) -> dict:
    return json.loads(bed.exec(host, "cat", f"{STATE_DIR}/state.json").stdout)


def calls(bed: Bed, host: str) -> list[str]:
    proc = bed.exec(host, "cat", f"{STATE_DIR}/calls.log", check=False)
    return proc.stdout.splitlines() if proc.returncode == 0 else []


def clear_calls(bed: Bed, host: str) -> None:
    bed.exec(host, "rm", "-f", f"{STATE_DIR}/calls.log")


def remove(bed: Bed, host: str) -> None:
    for tool in TOOLS:
        bed.exec(host, "rm", "-f", f"/usr/local/bin/{tool}")
    bed.exec(host, "rm", "-rf", STATE_DIR)
