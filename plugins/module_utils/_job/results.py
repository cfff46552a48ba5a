# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""One server's results in one call: the supervisor's own result and every rank's log in one archive.

Runs on target hosts: Python 3.8+, stdlib only. Shared by ``training_results`` and ``training_job state=results``.
"""

from __future__ import annotations

import os
import re
import tarfile
import tempfile
import time

from ansible_collections.ascend.cluster.plugins.module_utils import _options as options
from ansible_collections.ascend.cluster.plugins.module_utils._job import control, files

# The options of ``training_results``; ``training_job state=results`` takes the same in ``results`` (the action sends
# its calls there: the module the watch's polls have just run on the server, so Ansible builds one payload for both).
ARGS = options.spec(
    options.TOOL_PATHS,
    options.JOB_ROOT,
    job_id=dict(type="str", required=True),
    results_file=dict(type="path"),
    timeout=dict(type="float", default=20.0),
    dest=dict(type="path"),
    archive=dict(type="bool", default=False),  # set by the action when dest is given
    poll=dict(type="bool", default=False),
    tail_lines=dict(type="int", default=1),
    tail_failed=dict(type="int", default=20),
)

POLL_S = 0.1
# The line a training prints when it resumed from a checkpoint (the collection's stand-ins: train_1p.sh, train_gloo.py,
# hccl_standin.py with its "hccl_standin: " prefix; docs/hccl-standin.md), looked for near the start of each rank's log.
RESUMED = re.compile(rb"^(?:[\w.-]+: )?resumed from step (\d+)\b")
RESUME_HEAD = 1024 * 1024  # the most of a log's start read for it


def resumed_from(log: str) -> int | None:
    """The step a rank's ``train.log`` says it resumed from (its first such line), None when it says none."""
    try:
        with open(log, "rb") as handle:
            head = handle.read(RESUME_HEAD)
    except OSError:
        return None
    for line in head.splitlines():
        found = RESUMED.match(line.strip())
        if found:
            return int(found.group(1))
    return None


def resumed_steps(run_dir: str, ranks: list) -> dict:
    """``{rank_id: step}`` for this server's ranks whose logs say they resumed from a checkpoint."""
    steps = {}
    for rank in ranks:
        step = resumed_from(os.path.join(files.rank_dir(run_dir, rank["rank_id"]), files.TRAIN_LOG))
        if step is not None:
            steps[int(rank["rank_id"])] = step
    return steps


def log_name(rank_id: int) -> str:
    """A rank's log inside the archive (and on the controller): ``device_<rank>.log``."""
    return "device_%d.log" % int(rank_id)


def read_runner_result(results_file: str, timeout: float) -> dict | None:
    """The async job's final result once written (waits up to ``timeout`` s), else None.

    The async wrapper first writes ``{"started": ..., "finished": false}``, then the module's
    result, which has no ``started`` key.
    """
    deadline = time.time() + timeout
    while True:
        data = files.read_json(results_file)
        if isinstance(data, dict) and "started" not in data:
            return data
        if time.time() >= deadline:
            return None
        time.sleep(POLL_S)


def pack_logs(job_dir: str, run_dir: str, ranks: list) -> tuple:
    """``(archive path, names)``: every rank's ``train.log`` that exists, as ``device_<rank>.log``.

    The archive (gzip level 1: logs are text, the point is one transfer) is written in the job's
    directory, mode 0644 like the logs, for the controller to fetch and remove.
    """
    fd, path = tempfile.mkstemp(prefix=".logs-", suffix=".tar.gz", dir=job_dir)
    names = []
    try:
        with os.fdopen(fd, "wb") as raw, tarfile.open(fileobj=raw, mode="w:gz", compresslevel=1) as archive:
            for rank in ranks:
                log = os.path.join(files.rank_dir(run_dir, rank["rank_id"]), files.TRAIN_LOG)
                if os.path.isfile(log):
                    archive.add(log, arcname=log_name(rank["rank_id"]), recursive=False)
                    names.append(log_name(rank["rank_id"]))
        os.chmod(path, 0o644)
    except BaseException:
        os.unlink(path)
        raise
    return path, names


def collect(job_root: str, job: dict, results_file: str | None, timeout: float, archive: bool) -> dict:
    """The supervisor's result (removing its async file once read) and, with ``archive``, the logs' archive."""
    result = {
        "runner": None,
        "runner_finished": results_file is None,
        "archive": None,
        "logs": [],
        "resumed": resumed_steps(job["run_dir"], job["ranks"]),
    }  # type: dict
    if results_file:
        runner = read_runner_result(results_file, timeout)
        if runner is not None:
            result["runner"] = runner
            result["runner_finished"] = True
            os.unlink(results_file)  # what async_status mode=cleanup did
    if archive:
        result["archive"], result["logs"] = pack_logs(files.job_dir(job_root, job["job_id"]), job["run_dir"], job["ranks"])
    return result


def run(p: dict) -> dict:
    """The call's result for the validated options ``p`` (the job's results, with ``poll`` its ranks too);
    control.JobError when the job is not recorded here."""
    job = control.load_job(p["job_root"], p["job_id"])
    result = collect(p["job_root"], job, p["results_file"], p["timeout"], p["archive"])
    if p["poll"]:
        ranks = control.rank_states(p["job_root"], job, p["tail_lines"], p["tail_failed"])
        result.update(
            ranks=ranks,
            failed_rank=control.first_failure(ranks),
            stopped=[],
            abort=files.read_abort(files.job_dir(p["job_root"], job["job_id"])),
        )
    return dict(result, changed=bool(p["results_file"]))
