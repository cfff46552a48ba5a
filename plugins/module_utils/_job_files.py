# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where a training job keeps its files, and atomic JSON reads/writes for them.

Layout on each server (see docs/launch.md):

- ``<job_root>/<job_id>/job.json``   the job record (run dir, local ranks) written before launch;
- ``<job_root>/<job_id>/gate``       written by the controller once every rank is staged: start time;
- ``<job_root>/<job_id>/abort``      written by stop: runners still at the gate give up;
- ``<job_root>/latest``              the id of the newest job (status/stop default to it);
- ``<run_dir>/device_<rank>/``       the rank's working directory: ``env.log``, ``train.log``,
  ``state.json`` (phase, pids, start/end time, exit code);
- ``<lock_dir>/device_<id>.lock``    per-device ``flock``, held by the rank for its lifetime.

Runs on target hosts: Python 3.8+, stdlib only.
"""

from __future__ import annotations

import json
import os
import tempfile
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any

JOB_FILE = "job.json"
GATE_FILE = "gate"
ABORT_FILE = "abort"
LATEST_FILE = "latest"
STATE_FILE = "state.json"
ENV_LOG = "env.log"
TRAIN_LOG = "train.log"


def job_dir(job_root: str, job_id: str) -> str:
    return os.path.join(job_root, job_id)


def rank_dir(run_dir: str, rank_id: int) -> str:
    return os.path.join(run_dir, "device_%d" % int(rank_id))


def lock_path(lock_dir: str, device_id: int) -> str:
    return os.path.join(lock_dir, "device_%d.lock" % int(device_id))


def write_json(path: str, data: object) -> None:
    """Write JSON atomically (temp file in the same directory, then rename)."""
    directory = os.path.dirname(path) or "."
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=directory)
    try:
        with os.fdopen(fd, "w") as handle:
            json.dump(data, handle, sort_keys=True)
        os.rename(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def read_json(path: str, default: Any = None) -> Any:
    """The JSON in ``path``, or ``default`` when it does not exist (or is being replaced)."""
    try:
        with open(path) as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return default


def resolve_job_id(job_root: str, job_id: str) -> str | None:
    """``latest`` -> the id in ``<job_root>/latest``; other ids unchanged; None when unknown."""
    if job_id != "latest":
        return job_id
    try:
        with open(os.path.join(job_root, LATEST_FILE)) as handle:
            return handle.read().strip() or None
    except OSError:
        return None


def list_jobs(job_root: str) -> list:
    """Ids of every job recorded under ``job_root``, oldest first."""
    try:
        names = os.listdir(job_root)
    except OSError:
        return []
    jobs = [n for n in names if os.path.isfile(os.path.join(job_root, n, JOB_FILE))]
    return sorted(jobs, key=lambda n: os.path.getmtime(os.path.join(job_root, n, JOB_FILE)))
