# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Options of the modules that run training ranks (training_rank: one rank; training_ranks: a server's ranks).

Everything but the rank's identity (``rank_id``, ``device_id``, ``local_rank`` or the ``ranks`` list),
which each module documents itself. The argument spec that goes with it is
``module_utils/_options.py`` ``RANK``.
"""

from __future__ import annotations


class ModuleDocFragment:
    DOCUMENTATION = r"""
options:
  job_id:
    description: Id of the job.
    type: str
    required: true
  run_dir:
    description: The job's run directory; each rank works in C(device_<rank_id>) below it.
    type: path
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
  local_count:
    description: Ranks of the job on this server (C(DEVICE_NUM)); an AOE tuning run starts one of them.
    type: int
    required: true
  rank_table_path:
    description:
      - The rank table on this server (C(RANK_TABLE_FILE), and C(MINDSPORE_HCCL_CONFIG_PATH) for V(mindspore_legacy)).
      - The launch passes the job's own copy, C(<run_dir>/rank_table.json), which nothing but the launch writes.
    type: path
    required: true
  rank_table_sha256:
    description:
      - The sha256 of O(rank_table_path) as the launch wrote it. Just before the rank starts, its runner reads the file's
        sha256 and refuses the rank when it differs (phase C(refused), an error naming the file and both digests), which
        stops the job as any rank that could not start does.
      - Unset, the job record's C(rank_table_sha256) is used when the record names the same file; with neither, the
        file is not checked.
    type: str
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
  stall_timeout:
    description:
      - Seconds a running rank may make no progress (see O(progress_regex)), counted from its start, before it is
        stopped as failed (its Python stacks taken first with C(py-spy dump) when C(py-spy) is on PATH); V(0) never.
      - A stalled rank fails the job as a rank that exits non-zero does; its abort reason says how long it was
        silent and its log's last line.
    type: float
    default: 600.0
  progress_regex:
    description:
      - What counts as progress - empty, any output (the rank's C(train.log) growing); else only complete new lines of
        C(train.log) matching this Python regular expression. An invalid one is refused before anything starts.
    type: str
    default: ""
  fail_fast:
    description:
      - Whether a rank whose command ends badly - a non-zero exit, a death by a signal nobody of ours sent, a stall
        (O(stall_timeout)), running longer than O(max_runtime) - stops the job's other ranks. V(true) - its runner records
        the job's abort line and stops its siblings; the job's group stops every other server.
      - V(false) - the failure stays that rank's own, every other rank runs to its end (the job's record and its group's
        view say so, and the report says the other ranks were not stopped). A rank that could not start, a lost rank or
        server, and a stop stop the job either way.
    type: bool
    default: true
"""
