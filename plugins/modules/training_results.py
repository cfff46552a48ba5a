#!/usr/bin/python
# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Module training_results: one server's rank results and logs, collected in one call."""

from __future__ import annotations

DOCUMENTATION = r"""
module: training_results
short_description: Collect one server's training results and every rank's log in one call
version_added: 0.1.0
description:
  - The last step of the C(ascend.cluster.launch_training) role's watch, one task per server.
  - Waits up to O(timeout) seconds for the server's M(ascend.cluster.training_ranks) supervisor to write its result
    in its async O(results_file), returns it and removes the file (what C(async_status mode=cleanup) did).
  - With O(dest), packs every rank's C(train.log) into one archive on the server, copies it to the controller,
    unpacks it as O(dest)C(/device_<rank>.log) and removes the archive from the server.
  - The action runs on the controller and makes one module call on the server, M(ascend.cluster.training_job) V(results)
    with these options (the same code), so that a launch builds one module payload for all its calls on the servers.
author:
  - ascend.cluster contributors (!UNKNOWN)
options:
  job_id:
    description: The job.
    type: str
    required: true
  results_file:
    description: The supervisor's async results file (C(results_file) of the launch task); unset skips the wait.
    type: path
  timeout:
    description: Seconds to wait for the supervisor's result.
    type: float
    default: 20
  dest:
    description: Directory on the controller that receives the logs as C(device_<rank>.log); unset fetches none.
    type: path
  poll:
    description:
      - Also read every local rank's state as M(ascend.cluster.training_job) V(poll) does (RV(ranks), RV(failed_rank), RV(abort)),
        in the same call - the watch's last poll, once the ranks have ended (nothing is stopped).
    type: bool
    default: false
  tail_lines:
    description: With O(poll), lines of each rank's log to return.
    type: int
    default: 1
  tail_failed:
    description: With O(poll), lines of a failed rank's log to return, when more than O(tail_lines).
    type: int
    default: 20
  archive:
    description:
      - Pack every rank's C(train.log) into one archive in the job's directory on the server and return its path.
      - Set by the action from O(dest); give O(dest) instead.
    type: bool
    default: false
extends_documentation_fragment:
  - ascend.cluster.tools
  - ascend.cluster.jobs
attributes:
  action:
    support: full
    description: The action plugin fetches and unpacks the archive on the controller.
  check_mode:
    support: none
    description: Reads and removes files.
  diff_mode:
    support: none
    description: No diff.
  idempotent:
    support: none
    description: Removes the async results file it read.
"""

EXAMPLES = r"""
- name: Every rank's result and log from this server
  ascend.cluster.training_results:
    job_id: "{{ ascend_job_id }}"
    results_file: "{{ launched.results_file }}"
    dest: "~/.ansible/ascend-jobs/{{ ascend_job_id }}/logs/{{ inventory_hostname }}"
"""

RETURN = r"""
runner:
  description: The supervisor's result (C(ranks), C(msg), C(failed)); null when it did not finish within O(timeout).
  returned: always
  type: dict
runner_finished:
  description: Whether the supervisor's result was read.
  returned: always
  type: bool
ranks:
  description: With O(poll), every local rank's state (see M(ascend.cluster.training_job)).
  returned: with poll
  type: list
  elements: dict
failed_rank:
  description: With O(poll), the first local rank that failed, or null.
  returned: with poll
  type: dict
abort:
  description: With O(poll), the first line of the job's C(abort) file on this server, or null.
  returned: with poll
  type: str
resumed:
  description:
    - The step each local rank resumed from (rank id to step), for the ranks whose C(train.log) says so near its start
      with a line C(resumed from step N), optionally after a prefix such as C(hccl_standin:) (the stand-ins' line,
      docs/hccl-standin.md).
  returned: always
  type: dict
logs:
  description: The log files written to O(dest).
  returned: always
  type: list
  elements: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.ascend.cluster.plugins.module_utils._job import control
from ansible_collections.ascend.cluster.plugins.module_utils._job import results as job_results

# the spec and the work live in module_utils/_job/results: training_job state=results runs the same for the action
ARGS = job_results.ARGS


def main() -> None:
    module = AnsibleModule(argument_spec=ARGS, supports_check_mode=False)
    try:
        result = job_results.run(module.params)
    except control.JobError as exc:
        module.fail_json(msg=str(exc))
    module.exit_json(**result)


if __name__ == "__main__":
    main()
