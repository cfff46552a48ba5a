# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Options of the training job modules (training_job, training_rank, training_ranks, training_results,
training_watch).

``DOCUMENTATION`` (``ascend.cluster.jobs``) is the job records' directory, which all of them read;
``LOCK_DIR`` (``ascend.cluster.jobs.lock_dir``) the device locks, which training_rank and training_ranks
take and training_job checks. The argument spec that goes with them is ``module_utils/_options.py``.
"""

from __future__ import annotations


class ModuleDocFragment:
    DOCUMENTATION = r"""
options:
  job_root:
    description:
      - Where the job records live on the server (must be local to it); one directory per job id.
    type: path
    default: /var/lib/ascend-cluster/jobs
"""

    LOCK_DIR = r"""
options:
  lock_dir:
    description:
      - Directory of the per-device lock files (C(device_<id>.lock)) on the server.
    type: path
    default: /run/ascend-cluster/locks
"""

    GRACE = r"""
options:
  grace:
    description: Seconds between TERM and KILL when stopping ranks.
    type: float
    default: 3.0
"""
