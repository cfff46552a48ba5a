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
  - Meant to be started once per server by the C(ascend.cluster.launch_training) role, with O(detach) (or with
    C(async) and C(poll=0)).
  - A supervisor process starts one runner process per rank in O(ranks), each in its own session, and
    waits for them all. Each runner does exactly what M(ascend.cluster.training_rank) does for one rank -
    its directory C(<run_dir>/device_<rank>/), the device's lock, C(env.log), C(state.json), the wait
    at the gate and the command in its own session - so M(ascend.cluster.training_job) sees the same
    files and processes.
  - TERM or HUP sent to the supervisor is passed on to every runner.
  - With O(aoe_mode) (a tuning run) O(tune_bank_path) is made first (mode 0755) when missing - the tuner writes there.
  - The action (on the controller) can fold the launch's steps around the start into the same task, each one module
    call over the task's connection - before it, with O(record), M(ascend.cluster.training_job) V(record) (the rank
    table written and read back with O(rank_table), the job recorded); after it, with O(stage_timeout),
    M(ascend.cluster.training_job) V(staged) (RV(staged)). A Ctrl-C to C(ansible-playbook) during any of them stops the
    job on the server at once.
  - With O(detach) the action sends the call as M(ascend.cluster.training_job) V(stage) with these options (the same
    code), the module the pre-flight has just run on the server, so that a launch builds one module payload for both.
  - The command is never run through a shell.
author:
  - ascend.cluster contributors (!UNKNOWN)
options:
  ranks:
    description:
      - This server's ranks to start, one runner process each, in this order.
      - Each entry as the job's rank layout gives it (the P(ascend.cluster.rank_entries#filter) filter, or a host's slice
        of P(ascend.cluster.rank_layout#filter)) - the launch passes its slice as it is, and the module takes the layout's
        numbering. Entries written by hand need only O(ranks[].rank_id) and O(ranks[].device_id); their position in the
        list is then the rank's C(LOCAL_RANK).
      - In a launcher mode each rank's C(LOCAL_RANK) must be its position (the launcher numbers its workers so).
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
      local_index:
        description:
          - The rank's place among the server's ranks (C(LOCAL_RANK)), as the layout numbers them (by rank id).
          - Given for every entry or for none; each different and below the server's O(local_count).
        type: int
      local_count:
        description: The server's ranks in the rank table (C(DEVICE_NUM)), the same on every entry and as O(local_count).
        type: int
      device_ip:
        description: The rank's device IP, as the layout gives it; not used here (the rank table file carries it).
        type: str
      server_id:
        description: The rank's server in the rank table, as the layout gives it; not used here.
        type: str
  local_count:
    description:
      - Ranks of the job on this server (C(DEVICE_NUM)); an AOE tuning run starts one of them.
      - Unset, the entries' O(ranks[].local_count), else the number of O(ranks).
    type: int
    required: false
  launcher:
    description:
      - C(per_device) starts one runner per rank, as described above.
      - C(torchrun) or C(msrun) starts ONE runner for the server, which runs the per-node launcher once
        (C(torchrun --nnodes --node-rank --nproc-per-node --master-addr --master-port), C(msrun --worker_num
        --local_worker_num --master_addr --master_port --node_rank --log_dir --join=True)) in its own session,
        in C(<run_dir>/node_<node_rank>/), holding every device's lock, with C(ASCEND_RT_VISIBLE_DEVICES) set
        to the devices in O(ranks) order. The launcher's children are the ranks; each rank still gets its
        C(<run_dir>/device_<rank>/state.json) and C(train.log) (copied from the launcher's per-worker log).
      - In a launcher mode O(ranks) must be consecutive rank ids (the launcher numbers its children so).
    type: str
    choices: [per_device, torchrun, msrun]
    default: per_device
  launcher_path:
    description: The launcher program (default the O(launcher) name, found on the server's PATH).
    type: str
  launcher_args:
    description:
      - Extra launcher options, put after the ones the module builds and before the training command.
      - An option the module sets itself, or one that moves or renames the logs it copies (torchrun's C(--log-dir),
        msrun's C(--worker_log_name), ...), is refused naming why (P(ascend.cluster.launcher_args_refusal#filter)).
    type: list
    elements: str
    default: []
  node_rank:
    description: This server's index among the job's servers, rank 0's server being 0 (launcher modes).
    type: int
    default: 0
  nnodes:
    description: How many servers run the job (launcher modes).
    type: int
    default: 1
  detach:
    description:
      - Start the supervisor as a daemon of its own session and return at once (what C(async) with C(poll=0) did,
        without the async wrapper's file transfers and process); its result is written to
        C(<job_root>/<job_id>/supervisor.json) (RV(results_file)), which M(ascend.cluster.training_results) reads.
      - V(false) runs the supervisor in the module, until every rank has ended (use C(async) then).
    type: bool
    default: false
  record:
    description:
      - Before starting, record the job on the server (what M(ascend.cluster.training_job) V(record) does, in O(job_root)) -
        with O(detach) in the same module call, else by the action as a module call of its own.
    type: bool
    default: false
  rank_table:
    description:
      - With O(record), the job's rank table as JSON text; the job's own copy at O(rank_table_path) - which must be
        C(<run_dir>/rank_table.json), a file nothing else writes - is written with it (unless O(write_rank_table) is
        false; mode 0444), read back, and must be this table before the job is recorded and anything starts. Its sha256
        is recorded with the job and given to every runner (O(rank_table_sha256)), which refuses its rank when the file
        has changed by the time the rank starts.
      - The shared table (C(/etc/ascend/rank_table.json), the C(ascend.cluster.rank_table) role's) is never written here.
    type: str
  write_rank_table:
    description: With O(record) and O(rank_table), write the table first; V(false) only reads the file back and compares.
    type: bool
    default: true
  stage_timeout:
    description:
      - After the start (detached or async), wait up to this many seconds until every rank is staged at the gate
        (what M(ascend.cluster.training_job) V(staged) does; with O(detach) in the same call); a rank that cannot stage fails the task.
        V(0) does not wait.
    type: float
    default: 0
  barrier:
    description:
      - With O(stage_timeout), the play's hosts that start ranks (the job's servers). The task on O(anchor) waits, on the
        controller, until every other listed host's stage task has ended and then for the job's group to open the gate,
        so that a Ctrl-C at any moment between the first rank staged and the gate opening finds a worker to release the
        whole job and say one line for it (C(plugin_utils/_launch/staging)); the other hosts' tasks end once their own ranks are
        staged. Hosts no longer in the play (failed, unreachable) are not waited for.
    type: list
    elements: str
    default: []
  anchor:
    description:
      - With O(barrier), the host whose task holds the launch open (the job's coordinator host, rank 0's server). Not
        used with C(forks=1) when there are other hosts (it would hold the only worker).
    type: str
  join_wait:
    description:
      - With O(anchor), how long the anchor waits for the gate once every server has staged; when it is still shut
        then, the job is stopped there, naming what kept it shut. The anchor's result then has RV(gate).
    type: float
    default: 0
  run_files:
    description:
      - Files the ranks run (a script of the job's own), written into O(run_dir) by this call before any rank starts, each
        atomically with mode 0644 (O(run_dir) made with mode 0755 when missing) - no C(ansible.builtin.copy) round trips.
      - Keys are plain file names (no C(/)), values their text.
    type: dict
    default: {}
  group:
    description:
      - This server's place in the job's group (docs/launch.md, I(The job's group)) - the supervisor joins the group's
        coordinator at O(group.address):O(group.port) with O(group_secret), opens the gate when the group says so, passes
        the first line of the job's abort file on to the group, stops its ranks when the group says so, and stops them
        itself when the coordinator is silent for O(group.lost_after) seconds.
      - With O(group.coordinator) this call first binds the coordinator's socket on O(group.address) only (a port
        already taken fails the call before any rank starts) and the supervisor forks the coordinator, which waits for
        every server in O(group.hosts), opens the gate on every server O(group.gate_margin) seconds after every rank of
        every server is staged, relays the first stop to every member, and keeps its view in
        C(<job_root>/<job_id>/group.json).
      - Without it the ranks wait for the gate file (M(ascend.cluster.training_job) V(gate)) and nothing crosses servers.
    type: dict
    suboptions:
      address:
        description: The coordinator's address on the management network (rank 0's server's C(HCCL_IF_IP)).
        type: str
        required: true
      port:
        description: The coordinator's TCP port.
        type: int
        required: true
      host:
        description: This server's inventory name (the coordinator knows its members by it).
        type: str
        required: true
      server:
        description: This server's address, as messages name it (default O(group.host)).
        type: str
      coordinator:
        description: This server runs the coordinator.
        type: bool
        default: false
      hosts:
        description: With O(group.coordinator), every server of the job (inventory names).
        type: list
        elements: str
        default: []
      lost_after:
        description: Seconds of silence after which the other side is lost (a member, or the coordinator).
        type: float
        default: 3.0
      gate_margin:
        description: With O(group.coordinator), seconds from the moment every rank of every server is staged to the common start.
        type: float
        default: 0.5
      clock_offset:
        description:
          - This server's clock minus the controller's, in seconds (the pre-flight measures it); the gate's time comes in
            the controller's clock and is corrected by it here.
        type: float
        default: 0.0
  group_secret:
    description:
      - The job's secret; written to C(<job_root>/<job_id>/group.key), mode 0600. Never logged or returned.
      - The action (on the controller) passes it as it is only to the coordinator's server (O(group.coordinator)); every
        other server is given only its own key, derived from it (HMAC-SHA256 over the job id and O(group.host)), with
        which it can join the group as itself and as no other server. Called without the action, give a server other than
        the coordinator's that key (C(module_utils/_job/group/protocol.py member_key)).
    type: str
extends_documentation_fragment:
  - ascend.cluster.tools
  - ascend.cluster.jobs
  - ascend.cluster.jobs.lock_dir
  - ascend.cluster.rank
  - ascend.cluster.attributes.runs_command
"""

EXAMPLES = r"""
- name: This server's ranks (normally done by the launch_training role)
  ascend.cluster.training_ranks:
    job_id: "20260101T000000-1"
    run_dir: /data/runs/20260101T000000-1
    command: bash train_1p.sh --data_path=/data
    # a host's slice of the rank layout (ascend.cluster.rank_layout) may be given as it is
    ranks:
      - {rank_id: 8, device_id: 0}
      - {rank_id: 9, device_id: 1}
    rank_size: 16
    # the job's own copy of its table, written and recorded with the job (record, rank_table)
    record: true
    rank_table: "{{ ascend_rank_table | to_nice_json(indent=4) }}\n"
    rank_table_path: /data/runs/20260101T000000-1/rank_table.json
    detach: true
    stage_timeout: 120

- name: This server's ranks under torchrun, node 1 of 2 (normally done by the launch_training role)
  ascend.cluster.training_ranks:
    job_id: "20260101T000000-2"
    run_dir: /data/runs/20260101T000000-2
    command: python train.py --epochs 3
    framework: pytorch
    launcher: torchrun
    node_rank: 1
    nnodes: 2
    ranks:
      - {rank_id: 8, device_id: 0}
      - {rank_id: 9, device_id: 1}
    local_count: 2
    rank_size: 16
    rank_table_path: /etc/ascend/rank_table.json
    master_addr: 10.0.0.1
  async: 605000
  poll: 0
"""

RETURN = r"""
results_file:
  description: Where the supervisor's result appears (O(detach), or C(async) with C(poll=0)).
  returned: when detached or async
  type: str
  sample: /var/lib/ascend-cluster/jobs/20261124T050000-1234/supervisor.json
supervisor_pid:
  description: The detached supervisor's process id.
  returned: with detach
  type: int
staged:
  description: The result of M(ascend.cluster.training_job) V(staged) (its C(ranks), or C(msg) naming the ranks that could not stage).
  returned: with stage_timeout, once the start returned (detached or async)
  type: dict
gate:
  description:
    - On O(anchor), once every server staged - the job's group's answer to the gate (as M(ascend.cluster.training_job)
      V(gate) with C(group_wait) returns it) - C(start_at) when it opened, else C(failed) and C(msg) naming what kept it
      shut (the job was stopped).
  returned: on the anchor, when every server staged
  type: dict
ranks:
  description:
    - Every rank's final C(state.json), in the order of O(ranks) - C(phase) (C(exited), C(refused), C(aborted),
      C(gate_timeout)), C(rc), C(started) / C(ended), C(pid), C(runner_pid), C(log), C(error).
    - C(refused) with an C(error) naming the rank table and two sha256 digests - the job's table was changed after the
      launch wrote it; the rank was not started.
  returned: always
  type: list
  elements: dict
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.ascend.cluster.plugins.module_utils._job import stage

# the spec and the work live in module_utils/_job/stage: training_job state=stage runs the same for the launch role
ARGS = stage.ARGS


def main() -> None:
    module = AnsibleModule(
        argument_spec=ARGS,
        supports_check_mode=False,
        mutually_exclusive=stage.MUTUALLY_EXCLUSIVE,
        required_one_of=stage.REQUIRED_ONE_OF,
    )
    try:
        result = stage.run(module.params)
    except stage.StageFailed as exc:
        module.fail_json(**exc.fields)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
