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
    R(ascend.cluster.launch_training,ansible_collections.ascend.cluster.docsite.launch) role.
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
  job_id:
    description: Id of the job.
    type: str
    required: true
  job_root:
    description: Where job records live on this host (must be local to it).
    type: path
    default: /var/lib/ascend-cluster/jobs
  run_dir:
    description: The job's run directory; the rank works in C(device_<rank_id>) below it.
    type: path
    required: true
  lock_dir:
    description: Directory of the per-device lock files.
    type: path
    default: /run/ascend-cluster/locks
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
  local_count:
    description: Ranks of the job on this server (C(DEVICE_NUM)); an AOE tuning run starts one of them.
    type: int
    required: true
  argv:
    description: The training command as an argument list, exec'd as is. Give O(argv) or O(command).
    type: list
    elements: str
  command:
    description:
      - The training command as one string, split into words like a POSIX shell splits them (C(shlex.split), done
        by the action plugin on the controller) but never run through a shell - no expansion, no redirection.
    type: str
  framework:
    description: Which environment preset the rank gets.
    type: str
    choices: [mindspore, mindspore_legacy, pytorch, tensorflow]
    default: mindspore
  rank_size:
    description: Total ranks.
    type: int
    required: true
  rank_table_path:
    description: The rank table on this server (C(RANK_TABLE_FILE)).
    type: path
    required: true
  master_addr:
    description: Rank 0's server (PyTorch C(MASTER_ADDR)).
    type: str
    default: 127.0.0.1
  master_port:
    description: PyTorch C(MASTER_PORT).
    type: int
    default: 29500
  host_ip:
    description: This server's address (C(HCCL_IF_IP)).
    type: str
    default: 127.0.0.1
  connect_timeout:
    description: C(HCCL_CONNECT_TIMEOUT) in seconds (120-7200).
    type: int
    default: 120
  env:
    description: Extra variables, applied after the preset.
    type: dict
    default: {}
  tune_bank_path:
    description:
      - C(TUNE_BANK_PATH) for the rank - the AOE repository directory a gradient tuning run writes
        C(<soc>_gradient_fusion.json) into and a later training reads it from. Unset exports none.
      - O(env) may hold C(TUNE_BANK_PATH) too only with the same value (else the task fails at once).
    type: path
  aoe_mode:
    description:
      - C(AOE_MODE) for the rank (V(4) gradient tuning, V(2) operator tuning); unset exports none.
      - O(env) may hold C(AOE_MODE) too only with the same value.
    type: int
    choices: [2, 4]
  set_env:
    description: CANN C(set_env.sh), sourced before the command when it exists.
    type: path
    default: /usr/local/Ascend/ascend-toolkit/set_env.sh
  umask:
    description: Umask (octal string) for the rank's files and process; unset keeps the current one.
    type: str
  gate_timeout:
    description: Seconds to wait at the gate before giving up (the device is freed).
    type: int
    default: 600
  max_runtime:
    description: Seconds the command may run before it is stopped (TERM, then KILL after O(kill_grace)).
    type: int
    default: 604800
  kill_grace:
    description: Seconds between TERM and KILL.
    type: float
    default: 3.0
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

from ansible_collections.ascend.cluster.plugins.module_utils._job_command import check_argv, split_command
from ansible_collections.ascend.cluster.plugins.module_utils._job_env import AOE_MODES, FRAMEWORKS, aoe_conflicts
from ansible_collections.ascend.cluster.plugins.module_utils._job_supervisor import Supervisor, summary

ARGS = dict(
    job_id=dict(type="str", required=True),
    job_root=dict(type="path", default="/var/lib/ascend-cluster/jobs"),
    run_dir=dict(type="path", required=True),
    lock_dir=dict(type="path", default="/run/ascend-cluster/locks"),
    ranks=dict(
        type="list",
        elements="dict",
        required=True,
        options=dict(rank_id=dict(type="int", required=True), device_id=dict(type="int", required=True)),
    ),
    local_count=dict(type="int", required=True),
    argv=dict(type="list", elements="str"),
    command=dict(type="str"),
    framework=dict(type="str", choices=list(FRAMEWORKS), default="mindspore"),
    rank_size=dict(type="int", required=True),
    rank_table_path=dict(type="path", required=True),
    master_addr=dict(type="str", default="127.0.0.1"),
    master_port=dict(type="int", default=29500),
    host_ip=dict(type="str", default="127.0.0.1"),
    connect_timeout=dict(type="int", default=120),
    env=dict(type="dict", default={}),
    tune_bank_path=dict(type="path"),
    aoe_mode=dict(type="int", choices=list(AOE_MODES)),
    set_env=dict(type="path", default="/usr/local/Ascend/ascend-toolkit/set_env.sh"),
    umask=dict(type="str"),
    gate_timeout=dict(type="int", default=600),
    max_runtime=dict(type="int", default=604800),
    kill_grace=dict(type="float", default=3.0),
)


def main() -> None:
    module = AnsibleModule(
        argument_spec=ARGS, supports_check_mode=False, mutually_exclusive=[("argv", "command")], required_one_of=[("argv", "command")]
    )
    p = module.params
    try:
        if p["command"] is not None:
            p["argv"] = split_command(p["command"])
        else:
            check_argv(p["argv"])
    except ValueError as exc:
        module.fail_json(msg=str(exc))
    conflicts = aoe_conflicts(p["env"], p["tune_bank_path"], p["aoe_mode"])
    if conflicts:
        module.fail_json(msg="; ".join(conflicts))
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
