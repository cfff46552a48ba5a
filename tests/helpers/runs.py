"""Reading a launched job's run directory (<run_root>/<job_id>/device_<rank>/) from tests."""

from __future__ import annotations

import json
from pathlib import Path


def read_env_log(path: Path) -> dict[str, str]:
    """A rank's env.log (``NAME=value`` lines, as ``env`` wrote them) as a dict."""
    return dict(line.split("=", 1) for line in Path(path).read_text().splitlines())


def rank_states(job_dir: Path) -> dict[int, dict]:
    """Every rank's state.json under ``job_dir``, by rank id."""
    states = {}
    for path in Path(job_dir).glob("device_*/state.json"):
        state = json.loads(path.read_text())
        states[state["rank_id"]] = state
    return states


def snapshot(cluster, skip: tuple[str, ...] = ()) -> dict[str, bytes]:
    """Every file under the cluster's root but the simulator's own state (and ``skip``, top-level names)."""
    files = {}
    for path in sorted(cluster.root.rglob("*")):
        rel = path.relative_to(cluster.root)
        if path.is_file() and "state" not in rel.parts[1:2] and rel.parts[0] not in skip:
            files[str(rel)] = path.read_bytes()
    return files
