#!/usr/bin/python
# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Module training_ranks: run every rank of a training job on one server, each behind the job's start gate."""

from __future__ import annotations

DOCUMENTATION = r"""
module: training_ranks
short_description: Run one server's ranks of a distributed training job behind a start gate
version_added: 0.1.0
description:
  - Meant to be started once per server with C(async) and C(poll=0) by the
    C(ascend.cluster.launch_training) role.
  - A supervisor process starts one runner process per rank in O(ranks), each in its own session, and
    waits for them all. Each runner does exactly what M(ascend.cluster.training_rank) does for one rank -
    its directory C(<run_dir>/device_<rank>/), the device's lock, C(env.log), C(state.json), the wait
    at the gate and the command in its own session - so M(ascend.cluster.training_job) sees the same
    files and processes.
  - TERM or HUP sent to the supervisor is passed on to every runner.
  - The command is never run through a shell.
author:
  - ascend.cluster contributors (!UNKNOWN)
options:
  ranks:
    description:
      - This server's ranks to start, one runner process each, in this order.
      - The position in the list is the rank's C(LOCAL_RANK).
    type: list
    elements: dict
    required: true
    suboptions:
      rank_id:
        description: Global rank.
        type: int
        required: true
      device_id:
        description: Physical device of the rank.
        type: int
        required: true
extends_documentation_fragment:
  - ascend.cluster.tools
  - ascend.cluster.jobs
  - ascend.cluster.jobs.lock_dir
  - ascend.cluster.rank
attributes:
  check_mode:
    support: none
    description: Starts processes, which cannot be simulated.
  diff_mode:
    support: none
    description: No diff.
  idempotent:
    support: none
    description: Every call runs the command.
"""

EXAMPLES = r"""
- name: This server's ranks (normally done by the launch_training role)
  ascend.cluster.training_ranks:
    job_id: "20260101T000000-1"
    run_dir: /data/runs/20260101T000000-1
    command: bash train_1p.sh --data_path=/data
    ranks:
      - {rank_id: 8, device_id: 0}
      - {rank_id: 9, device_id: 1}
    local_count: 2
    rank_size: 16
    rank_table_path: /etc/ascend/rank_table.json
  async: 605000
  poll: 0
"""

RETURN = r"""
ranks:
  description:
    - Every rank's final C(state.json), in the order of O(ranks) - C(phase) (C(exited), C(refused), C(aborted),
      C(gate_timeout)), C(rc), C(started) / C(ended), C(pid), C(runner_pid), C(log), C(error).
  returned: always
  type: list
  elements: dict
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.ascend.cluster.plugins.module_utils import _options as options
from ansible_collections.ascend.cluster.plugins.module_utils._job_command import resolve_launch
from ansible_collections.ascend.cluster.plugins.module_utils._job_supervisor import Supervisor, summary

ARGS = options.spec(
    options.TOOL_PATHS,
    options.JOB_ROOT,
    options.LOCK_DIR,
    options.RANK,
    ranks=dict(
        type="list",
        elements="dict",
        required=True,
        options=dict(rank_id=dict(type="int", required=True), device_id=dict(type="int", required=True)),
    ),
)


def main() -> None:
    module = AnsibleModule(
        argument_spec=ARGS, supports_check_mode=False, mutually_exclusive=[("argv", "command")], required_one_of=[("argv", "command")]
    )
    p = module.params
    try:
        resolve_launch(p)
    except ValueError as exc:
        module.fail_json(msg=str(exc))
    if len(set(r["rank_id"] for r in p["ranks"])) != len(p["ranks"]) or len(set(r["device_id"] for r in p["ranks"])) != len(p["ranks"]):
        module.fail_json(msg="ranks: every rank_id and every device_id may appear once only")
    p["ranks"] = [dict(r, local_rank=index, local_count=p["local_count"]) for index, r in enumerate(p["ranks"])]
    states = Supervisor(p).run()
    ok, msg = summary(states)
    if not ok:
        module.fail_json(msg=msg, ranks=states)
    module.exit_json(changed=True, msg=msg, ranks=states)


if __name__ == "__main__":
    main()
