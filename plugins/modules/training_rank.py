#!/usr/bin/python
# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Module training_rank: run one training rank behind the job's start gate."""

from __future__ import annotations

DOCUMENTATION = r"""
module: training_rank
short_description: Run one rank of a distributed training job behind a start gate
version_added: 0.1.0
description:
  - Meant to be started once per device with C(async) and C(poll=0) by the
    C(ascend.cluster.launch_training) role.
  - Creates the rank's working directory C(<run_dir>/device_<rank>/), takes the device's lock
    (C(flock) on C(<lock_dir>/device_<id>.lock), held until the rank ends), writes C(env.log),
    then waits until the controller opens the job's gate (C(<job_root>/<job_id>/gate)) and
    starts the training command at the gate's start time, in its own session, with its output
    in C(train.log).
  - Every phase is written to C(state.json) in the rank's directory;
    M(ascend.cluster.training_job) reads it.
  - The command is never run through a shell.
author:
  - ascend.cluster contributors (!UNKNOWN)
options:
  rank_id:
    description: Global rank.
    type: int
    required: true
  device_id:
    description: Physical device of this rank.
    type: int
    required: true
  local_rank:
    description: Index of this rank among the server's ranks.
    type: int
    required: true
extends_documentation_fragment:
  - ascend.cluster.tools
  - ascend.cluster.jobs
  - ascend.cluster.jobs.lock_dir
  - ascend.cluster.rank
  - ascend.cluster.attributes.runs_command
"""

EXAMPLES = r"""
- name: One rank (normally looped over ascend_local_ranks by the launch_training role)
  ascend.cluster.training_rank:
    job_id: "20260101T000000-1"
    run_dir: /data/runs/20260101T000000-1
    argv: [bash, train_1p.sh, --data_path=/data]
    rank_id: 0
    device_id: 0
    rank_size: 8
    local_rank: 0
    local_count: 8
    rank_table_path: /etc/ascend/rank_table.json
  async: 605000
  poll: 0
"""

RETURN = r"""
rank:
  description:
    - The rank's final C(state.json) - C(phase) (C(exited), C(refused), C(aborted), C(gate_timeout)), C(rc) (exit code,
      negative when killed by that signal), C(started) / C(ended) (epoch times), C(pid), C(log), C(error).
  returned: always
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.ascend.cluster.plugins.module_utils import _options as options
from ansible_collections.ascend.cluster.plugins.module_utils._job import files
from ansible_collections.ascend.cluster.plugins.module_utils._job.command import resolve_launch
from ansible_collections.ascend.cluster.plugins.module_utils._job.runner import RankRunner

ARGS = options.spec(
    options.TOOL_PATHS,
    options.JOB_ROOT,
    options.LOCK_DIR,
    options.RANK,
    rank_id=dict(type="int", required=True),
    device_id=dict(type="int", required=True),
    local_rank=dict(type="int", required=True),
)


def main() -> None:
    module = AnsibleModule(
        argument_spec=ARGS, supports_check_mode=False, mutually_exclusive=[("argv", "command")], required_one_of=[("argv", "command")]
    )
    try:
        resolve_launch(module.params)
    except ValueError as exc:
        module.fail_json(msg=str(exc))
    state = RankRunner(module.params).run()
    # The state goes under "rank": async_status gives "started"/"finished" at the top level their own meaning.
    msg = "rank %d: %s" % (state["rank_id"], state.get("error") or "%s rc=%s" % (state.get("phase"), state.get("rc")))
    if state.get("phase") != files.EXITED or state.get("rc") != 0:
        module.fail_json(msg=msg, rank=state)
    module.exit_json(changed=True, msg=msg, rank=state)


if __name__ == "__main__":
    main()
