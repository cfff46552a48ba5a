#!/usr/bin/python
# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Module training_job: one server's side of a training job (pre-flight, record, gate, poll, stop)."""

from __future__ import annotations

DOCUMENTATION = r"""
module: training_job
short_description: Check, record, start, watch and stop a training job on one server
version_added: 0.1.0
description:
  - The target side of the C(ascend.cluster.launch_training)
    role; every state reads and writes the files the M(ascend.cluster.training_rank) runners keep,
    so it works from any controller, also after the one that launched the job was interrupted.
  - V(preflight) fails, naming each cause, when any of O(devices) is held by a process (C(npu-smi
    info) process list), by a live rank of a recorded job, or by another launch's device lock.
    With O(kill_stale) it stops those holders and waits up to O(stale_timeout) for the devices to free.
  - V(preflight) also reads the chip health of each of O(devices) from the same C(npu-smi info) table. C(Alarm) or
    C(Critical) fails, naming the device (before anything is stopped or started); C(Warning) or C(UNKNOWN) is returned in
    RV(chip_health), and P(ascend.cluster.preflight_verdict#filter) warns of it on the controller, naming the server.
    It returns the driver version npu-smi prints in its header, the firmware version of each selected NPU's board
    (C(npu-smi info -t board -i <NPU id>)) and the CANN toolkit and kernels versions (their version files under
    O(cann_dir)), for a cluster-wide comparison on the controller (P(ascend.cluster.preflight_verdict#filter)).
  - Devices are numbered one way throughout - the health rows, the process rows and O(devices) - as the rank table
    and C(hccn_tool -i) number them - on A3 boards (two chips per NPU) a chip's C(Phy-ID), so the process row
    C(NPU 4, chip 1) is device 9.
  - When npu-smi is missing, fails, prints what cannot be parsed (no NPU table, no process section) or shows none of a
    selected device, the chips' health and the processes holding the devices are unknown - RV(npu_smi_problem) says
    what failed. Unless O(allow_unknown_health), V(preflight) then checks nothing else and stops nothing (also with
    O(kill_stale)) and returns RV(npu_smi_status) V(refuse), and P(ascend.cluster.preflight_verdict#filter) refuses
    the launch naming every such server; with it, the checks go on (holders from job records and locks only) and the
    controller warns, naming the server.
  - V(preflight) with O(bank_dir) also counts the AOE tuning repository's files (C(*_gradient_fusion.json)) there
    (RV(bank_files)), so that the controller can decide whether every server has it.
  - With V(preflight) and O(clock_samples) (the action, on the controller, before the module runs) the server's clock is
    read over the connection like M(ascend.cluster.clock_offset) does (RV(clock)); a server whose offset is refused
    runs no other check (nothing is stopped there, also with O(kill_stale)).
  - V(record) writes the job record (C(<job_root>/<job_id>/job.json)) for O(ranks). With O(rank_table_path) and
    O(rank_table) it first writes the job's own copy of its table there (O(write_rank_table); its directory when missing,
    atomic rename, mode 0444), reads the file back and fails, recording nothing, when it is not that table; the record
    keeps the file's path and sha256 (RV(rank_table_sha256)), which each rank's runner checks just before it starts the
    rank. O(rank_table_path) must be C(<run_dir>/rank_table.json) - the ranks read only that copy, which nothing else
    writes, never a shared path such as C(/etc/ascend/rank_table.json).
  - V(staged) waits until every local rank is staged at the gate; fails if any could not stage, saying what the job
    leaves on the server (its record and run directory, with its own rank table).
  - V(stage) does what M(ascend.cluster.training_ranks) does, with that module's options given as O(stage). The
    C(ascend.cluster.training_ranks) action sends its O(ascend.cluster.training_ranks#module:detach) calls here, to the
    module the pre-flight has just run on the server, so that one module payload is built for both. Not run in check mode.
  - V(results) does what M(ascend.cluster.training_results) does, with that module's options given as O(results) (its
    action, and the watch once every local rank has ended, send their calls here for the same reason).
  - V(gate) opens the gate, so that every rank starts its command at O(start_at), and makes the job the
    latest one (a job refused or interrupted before it started never becomes it).
  - For a named O(job_id) the action opens the gate with one shell command over the task's connection (the same two
    files, each renamed into place), without sending the module.
  - A Ctrl-C (or SIGTERM) to C(ansible-playbook) during V(staged) or V(gate) stops the job on the server at
    once (as V(stop) does), so its staged runners release their devices instead of waiting for the gate time-out.
  - V(poll) and V(status) report every local rank; V(poll) with O(fail_fast) stops the other
    local ranks as soon as one has failed.
  - V(stop) stops every local rank (TERM, then KILL after O(grace)), waits for their runners to
    release the device locks; O(job_id=all) stops every recorded job with live ranks.
  - V(diagnose) only reads (for C(playbooks/diagnose.yml)) every local rank's state, and for each failed or stopped
    rank the last O(tail_failed) lines of its log and the ERROR and WARNING lines of its processes' plogs
    (C(plog-<pid>_*.log) where CANN writes it for the rank's environment in C(env.log), that is
    C($ASCEND_PROCESS_LOG_PATH) or C($HOME/ascend/log), under C(debug/plog), C(run/plog) or C(plog); the pids are the
    command's and those its runner saw in the command's process tree - C(python) under C(bash train.sh), a worker under
    torchrun or msrun); with them what holds the job's devices now (npu-smi, job records, device locks).
  - V(diagnose) also takes the job's ports from its ranks' C(env.log) (RV(job_ports) - HCCL's device port 16666,
    O(hccl_port_count) host ports from C(HCCL_IF_BASE_PORT), C(MASTER_PORT)) and O(ports), says which are listened on
    (RV(ports_in_use)) and which the host's packet filter drops or rejects (RV(packet_filter) - the rules of
    C(iptables-nft-save), C(iptables-legacy-save) and C(nft -j list ruleset)).
author:
  - ascend.cluster contributors (!UNKNOWN)
options:
  state:
    description: What to do.
    type: str
    choices: [preflight, record, staged, stage, gate, poll, status, stop, results, diagnose]
    required: true
  stage:
    description:
      - V(stage) only - the options of M(ascend.cluster.training_ranks) (validated as that module validates them).
    type: dict
  group_secret:
    description:
      - V(stage) only - the job's group secret (M(ascend.cluster.training_ranks)'s O(ascend.cluster.training_ranks#module:group_secret)),
        given here rather than inside O(stage) so that it is never logged or returned.
    type: str
  results:
    description:
      - V(results) only - the options of M(ascend.cluster.training_results) (validated as that module validates them).
    type: dict
  job_id:
    description:
      - The job; V(all) (with V(stop) only) every job.
      - V(latest) is the newest job started on this host, or a job recorded after it whose ranks still wait at its gate
        (its launch was interrupted or killed before the gate opened, or is under way) - V(status) shows it, V(stop)
        releases it, V(diagnose) reads it.
    type: str
    default: latest
  run_dir:
    description: The job's run directory (V(record)).
    type: path
  rank_table_path:
    description:
      - The job's own rank table on this server (V(record)), the file C(RANK_TABLE_FILE) names; it must be
        C(<run_dir>/rank_table.json) (O(run_dir)).
    type: path
  rank_table:
    description:
      - The job's rank table, its JSON text (V(record); as C(to_nice_json(indent=4)) writes it). The file at
        O(rank_table_path) must hold this document before the job is recorded.
    type: str
  write_rank_table:
    description: Write O(rank_table) to O(rank_table_path) first (V(record)); V(false) only reads the file back and compares.
    type: bool
    default: true
  ranks:
    description: This server's ranks, C([{rank_id, device_id}]) (V(record)).
    type: list
    elements: dict
    default: []
  reason:
    description: Why the job is stopped (kept in the job's C(abort) file).
    type: str
    default: stop requested
extends_documentation_fragment:
  - ascend.cluster.tools
  - ascend.cluster.jobs
  - ascend.cluster.jobs.lock_dir
  - ascend.cluster.jobs.grace
  - ascend.cluster.jobs.preflight
  - ascend.cluster.jobs.diagnose
  - ascend.cluster.jobs.poll
  - ascend.cluster.jobs.gate
attributes:
  check_mode:
    support: partial
    description:
      V(status), V(diagnose), V(staged), V(poll) and V(preflight) without O(kill_stale) only read; V(record), V(gate) and V(stop) change nothing.
    details:
      V(preflight) with O(kill_stale) reports the holders instead of stopping them; V(record) says whether the rank table
      would be written (RV(rank_table_steps)) and compares the file only when it would not be.
  diff_mode:
    support: none
    description: No diff.
  idempotent:
    support: full
    description: Stopping a stopped job or opening an open gate again changes nothing.
"""

EXAMPLES = r"""
- name: Per-rank state of the newest job
  ascend.cluster.training_job:
    state: status
    tail_lines: 1

- name: What a failed job left behind on this server (read-only; playbooks/diagnose.yml)
  ascend.cluster.training_job:
    state: diagnose
    job_id: latest
    tail_failed: 200
    ports: [16666]

- name: Pre-flight, with the clock read first and the tuning repository counted
  ascend.cluster.training_job:
    state: preflight
    devices: [0, 1, 2, 3, 4, 5, 6, 7]
    clock_samples: 3
    bank_dir: /var/lib/ascend-cluster/tune_bank

- name: Write the rank table, check it on disk, record the job
  ascend.cluster.training_job:
    state: record
    job_id: job1
    run_dir: /run/ascend-cluster/runs/job1
    ranks: [{rank_id: 0, device_id: 0}]
    rank_table_path: /etc/ascend/rank_table.json
    rank_table: "{{ ascend_rank_table | to_nice_json(indent=4) }}\n"

- name: Stop every job of ours on this server (after the controller was interrupted)
  ascend.cluster.training_job:
    state: stop
    job_id: all
"""

RETURN = r"""
job_id:
  description: The job acted on.
  returned: except with preflight and stage
  type: str
results_file:
  description: V(stage) - what M(ascend.cluster.training_ranks) returns as RV(ascend.cluster.training_ranks#module:results_file).
  returned: with stage
  type: str
supervisor_pid:
  description: V(stage) - the detached supervisor's process id.
  returned: with stage and O(ascend.cluster.training_ranks#module:detach)
  type: int
staged:
  description: V(stage) - as RV(ascend.cluster.training_ranks#module:staged).
  returned: with stage and O(ascend.cluster.training_ranks#module:stage_timeout)
  type: dict
start_at:
  description:
    - V(gate) - the common start time; with O(group_wait) the one the job's coordinator picked once every rank of every
      server was staged, in the controller's clock (each server's gate is that plus its own clock offset).
  returned: with gate
  type: float
group:
  description: V(gate) with O(group_wait) - the job's group as its coordinator saw it then (the view in C(group.json)).
  returned: with gate and group_wait
  type: dict
missing:
  description: V(gate) with O(group_wait) - the servers that kept the gate shut (not joined, ranks not staged).
  returned: with gate and group_wait, when the gate did not open
  type: list
  elements: str
runner:
  description: V(results) - as RV(ascend.cluster.training_results#module:runner).
  returned: with results
  type: dict
runner_finished:
  description: V(results) - as RV(ascend.cluster.training_results#module:runner_finished).
  returned: with results
  type: bool
resumed:
  description: V(results) - as RV(ascend.cluster.training_results#module:resumed).
  returned: with results
  type: dict
ranks:
  description:
    - One entry per local rank (rank_id, device_id, state, phase, rc, started, ended, duration, pid, log, tail, error,
      clock_offset - this server's clock offset against the controller's, by which C(started) and C(ended), in this
      server's clock, are read in the controller's).
    - With V(diagnose), a failed or stopped rank also has C(plog), C({pid, pids, files, lines}) - its processes' plog
      files (C(pids) - the command's and those of its process tree) and their first O(plog_lines) ERROR and WARNING lines,
      and C(torch_error) when it wrote torch's C(@record) error file (C(error.json) in its directory, which
      C(TORCHELASTIC_ERROR_FILE) names in the V(pytorch) preset) - C({exception, traceback, timestamp, error_code, path}).
  returned: with staged, poll, status, stop and diagnose
  type: list
  elements: dict
group_cause:
  description:
    - V(diagnose) - on the server that ran the job's coordinator (rank 0's), the job's first failure as its group decided
      it (the C(cause) in C(<job_root>/<job_id>/group.json) - C(rank_id), C(server), C(host), C(rc), C(error), ...); null
      elsewhere, or when the group named none.
  returned: with diagnose
  type: dict
group_health:
  description:
    - V(status) and V(diagnose) - what this server's job files say of the job's group (C(module_utils/_job/group/view.py health)).
    - C(coordinator) - the status in C(group.json) on the coordinator's server (V(crashed) when its loop ended by an
      error), null elsewhere; C(member) - this server's member's state (V(lost) when it lost the coordinator); C(problem)
      - one sentence naming the coordinator's crash (its error and log), its silence (C(group.json) not rewritten
      for O(ascend.cluster.training_ranks#module:group.lost_after) + 1 s) or its loss, with the time in this server's
      clock; null when none.
  returned: with status and diagnose
  type: dict
  sample: {"coordinator": "crashed", "member": "lost", "problem": "the job's coordinator at 10.0.0.1:29700 crashed at 12:03:04: ..."}
busy:
  description: What holds the devices (V(preflight)); what holds the job's devices now (V(diagnose)).
  returned: with preflight and diagnose
  type: list
  elements: dict
chip_health:
  description: The C(npu-smi info) Health of each of O(devices) that the table shows (V(preflight)), device id to health.
  returned: with preflight, when npu-smi answered
  type: dict
  sample: {"0": "OK", "3": "Warning"}
chip_errors:
  description:
    - For each of O(devices) whose health is not OK, the error code and information its chip reports
      (C(npu-smi info -t health -i <NPU> -c <chip>)), device id to text (V(preflight)); a device whose query fails or
      prints no code is left out. The refusal of an Alarm / Critical chip and the controller's warning name it.
  returned: with preflight, when npu-smi answered
  type: dict
  sample: {"5": "Error Code A4025021 8C03A000 8C084E00 (ascend_monitor adda heart beat lost error)"}
version_fit:
  description:
    - Whether this server's NPU driver, firmware and CANN work together (V(preflight)), from the packages' version files -
      the driver's C(version.info) (its C(compatible_version_fw) must hold the firmware's C(Version), and the driver and
      the CANN toolkit must list each other's inner version in C(compatible_version)) - and the boards' C(Compatibility)
      (C(NOK) is a problem). The files are looked for under O(cann_dir), the directories C(/etc/ascend_install.info)
      names, and C(/usr/local/Ascend).
    - C(problems) refuse the launch on the controller (unless C(ascend_launch_allow_mixed_versions)); C(unknown) (a
      file not found, a key it lacks) is warned of.
  returned: with preflight
  type: dict
  contains:
    problems:
      description: What does not fit, each naming the file and the line.
      type: list
      elements: str
    unknown:
      description: What could not be checked.
      type: list
      elements: str
npu_smi_version:
  description: The version in C(npu-smi info)'s header (the driver's), or null when npu-smi did not answer (V(preflight)).
  returned: with preflight
  type: str
  sample: 24.1.0
firmware_version:
  description:
    - The C(Firmware Version) that C(npu-smi info -t board -i <NPU id>) prints for every NPU holding a selected device
      (V(preflight)); C(<version> (NPU <ids>) / ...) when they differ; null when any NPU's is unknown (npu-smi not read,
      the query failing, or C(NA), which some boards print to a non-root user).
  returned: with preflight
  type: str
  sample: 7.1.0.4.218
cann_toolkit_version:
  description: The C(version) of the CANN toolkit's C(ascend_toolkit_install.info) under O(cann_dir); null when none was found (V(preflight)).
  returned: with preflight
  type: str
  sample: 8.3.RC2
cann_kernels_version:
  description:
    - The CANN kernels' version (V(preflight)) - C(version_dir) of C(opp_kernel/version.info), or from CANN 8.5 the
      C(version) of C(ascend_ops_install.info); V(not installed) without such a file; null when the file gives none.
  returned: with preflight
  type: str
  sample: 8.3.RC2
npu_smi_problem:
  description:
    - What kept C(npu-smi info) from being read here - not found, failed (its exit code and error), an output without its
      NPU table or process section, or a selected device it does not show; null when it was read (V(preflight),
      V(diagnose)).
  returned: with preflight and diagnose
  type: str
  sample: "npu-smi not found on PATH or in /usr/local/sbin, /usr/local/bin, /usr/local/Ascend/driver/tools"
npu_smi_status:
  description:
    - V(ok) (npu-smi was read), V(refuse) (it was not, and nothing else was checked or stopped here) or V(allowed) (it
      was not, and O(allow_unknown_health) let the checks go on) (V(preflight)).
  returned: with preflight
  type: str
  sample: ok
host_ip:
  description: C(HCCL_IF_IP) for this server - the address of O(nic) when it is set, else O(host_ip) (V(preflight)).
  returned: with preflight
  type: str
  sample: 10.0.0.11
nic:
  description: O(nic), as checked (V(preflight)).
  returned: with preflight
  type: str
bank_files:
  description: How many C(*_gradient_fusion.json) files O(bank_dir) holds (V(preflight) with O(bank_dir)).
  returned: with preflight and bank_dir
  type: int
  sample: 1
clock:
  description:
    - The server's clock against the controller's, as M(ascend.cluster.clock_offset) returns it - C(server), C(offset),
      C(uncertainty), C(rtt), C(samples), C(status) (V(ok), V(warn) or V(refuse)) and C(msg) (V(preflight) with O(clock_samples)).
  returned: with preflight and clock_samples
  type: dict
  sample: {"server": "h1", "offset": 0.0021, "uncertainty": 0.0042, "rtt": 0.0084, "samples": 5, "status": "ok", "msg": ""}
rank_table_steps:
  description: What writing the rank table did (or would do) - V(mkdir), V(write), V(chmod); empty when the file was the table (V(record)).
  returned: with record and rank_table
  type: list
  elements: str
rank_table_path:
  description: The job's own rank table (V(record) with O(rank_table)).
  returned: with record and rank_table
  type: str
  sample: /var/lib/ascend-cluster/runs/20261127T001500-4711/rank_table.json
rank_table_sha256:
  description:
    - The sha256 of the job's rank table as written (V(record) with O(rank_table); in check mode, of the text that would
      be). Kept in the job record; each runner refuses its rank when the file no longer has it.
  returned: with record and rank_table
  type: str
  sample: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08
rank_table_mismatch:
  description: True when the file at O(rank_table_path) is not O(rank_table) (V(record), which then fails).
  returned: on that failure
  type: bool
ports_in_use:
  description: The O(ports) something already listens on, port to holder (C(pid N (name))) (V(preflight), when it fails for them; V(diagnose)).
  returned: on a failed preflight for ports, and with diagnose
  type: dict
job_ports:
  description: V(diagnose) - the ports the job uses here, port to what it is (from the ranks' C(env.log), and O(ports)).
  returned: with diagnose
  type: dict
  sample: {"16666": "HCCL's device port", "60000": "HCCL's host ports (HCCL_IF_BASE_PORT unset: 60000)"}
packet_filter:
  description:
    - V(diagnose) - what in the host's packet filter drops or rejects new TCP connections to RV(job_ports) - C(blocks), one
      per rule or chain policy (C(tool), C(chain), C(direction), C(rule), C(verdict), C(ports), C(conditional), C(text)),
      C(read) (the tools read), C(unread) (a tool that failed, and why) and C(found), all of it in one line.
  returned: with diagnose
  type: dict
  sample:
    found: "iptables (nf_tables) INPUT: -A INPUT -p tcp -m tcp --dport 16666 -j DROP drops incoming TCP port 16666"
    read: [iptables-nft-save, iptables-legacy-save, nft]
    unread: []
    blocks: []
failed_rank:
  description: The first local rank that failed (V(poll), V(diagnose)).
  returned: with poll and diagnose
  type: dict
stopped:
  description: Rank ids that were stopped (by V(stop), or by V(poll) after a failure).
  returned: with stop and poll
  type: list
abort:
  description:
    - The first line of the job's C(abort) file on this server, which says who or what is stopping the job
      (a failing rank's runner writes C(rank N failed) and its exit code), or null when nothing is stopping it.
  returned: with poll, status and diagnose
  type: str
fail_fast:
  description: Whether one rank's failure stops the job's other ranks - O(fail_fast), else as the job was launched.
  returned: with poll and status
  type: bool
"""


from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.ascend.cluster.plugins.module_utils import _options as options
from ansible_collections.ascend.cluster.plugins.module_utils._job import control, files, group, preflight, stage
from ansible_collections.ascend.cluster.plugins.module_utils._job import evidence as job_diagnose
from ansible_collections.ascend.cluster.plugins.module_utils._job import results as job_results

ARGS = options.spec(
    options.TOOL_PATHS,
    options.JOB_ROOT,
    options.LOCK_DIR,
    options.GRACE,
    state=dict(
        type="str",
        required=True,
        choices=["preflight", "record", "staged", "stage", "gate", "poll", "status", "stop", "results", "diagnose"],
    ),
    stage=dict(type="dict"),
    group_secret=dict(type="str", no_log=True),
    results=dict(type="dict"),
    job_id=dict(type="str", default="latest"),
    run_dir=dict(type="path"),
    ranks=dict(type="list", elements="dict", default=[]),
    rank_table_path=dict(type="path"),
    rank_table=dict(type="str"),
    write_rank_table=dict(type="bool", default=True),
    bank_dir=dict(type="path"),
    # taken by the action (plugins/action/training_job.py) before the module runs; declared so that they validate the same way
    clock_samples=dict(type="int", default=0),
    clock_warn_above=dict(type="float", default=1.0),
    clock_refuse_above=dict(type="float", default=30.0),
    clock_allow=dict(type="bool", default=False),
    devices=dict(type="list", elements="int", default=[]),
    ports=dict(type="list", elements="int", default=[]),
    host_ip=dict(type="str", default=""),
    nic=dict(type="str", default=""),
    kill_stale=dict(type="bool", default=False),
    allow_unknown_health=dict(type="bool", default=False),
    cann_dir=dict(type="path"),
    stale_timeout=dict(type="float", default=30.0),
    timeout=dict(type="float", default=120.0),
    start_at=dict(type="float"),
    group_wait=dict(type="float"),
    fail_fast=dict(type="bool", aliases=["stop_on_failure"]),
    tail_lines=dict(type="int", default=0),
    tail_failed=dict(type="int", default=20),
    reason=dict(type="str", default="stop requested"),
    plog_dirs=dict(type="list", elements="path", default=[]),
    plog_lines=dict(type="int", default=200),
    hccl_port_count=dict(type="int", default=16),
)
REQUIRED_IF = [
    ("state", "record", ["run_dir", "job_id"]),
    ("state", "gate", ["start_at", "group_wait"], True),
    ("state", "stage", ["stage"]),
    ("state", "results", ["results"]),
]
REQUIRED_TOGETHER = [("rank_table_path", "rank_table")]


def do_record(module: AnsibleModule) -> dict:
    """Write (or only check) the rank table on disk, then record the job; nothing is recorded for a wrong table."""
    p = module.params
    try:
        table = control.record_with_table(
            p["job_root"], p, p["rank_table_path"], p["rank_table"], p["write_rank_table"], check_mode=module.check_mode
        )
    except control.RankTableMismatch as exc:
        module.fail_json(msg=str(exc), rank_table_mismatch=True, rank_table_steps=exc.steps)
    return dict(changed=True, job_id=p["job_id"], **table)


def nested(module: AnsibleModule, name: str, validator: ArgumentSpecValidator, **more: object) -> dict:
    """The options given in ``name`` (another module's) and ``more``, validated with that module's spec; a failure names ``name``."""
    if module.check_mode:
        module.exit_json(changed=False, skipped=True, msg="state=%s is not run in check mode" % name)
    given = dict(module.params[name] or {}, **dict((k, v) for k, v in more.items() if v is not None))
    checked = validator.validate(given)
    if checked.error_messages:
        module.fail_json(msg="%s: %s" % (name, "; ".join(checked.error_messages)))
    return checked.validated_parameters


def do_stage(module: AnsibleModule) -> dict:
    """State ``stage``: ``training_ranks``' work (it starts processes: not in check mode)."""
    p = nested(
        module,
        "stage",
        ArgumentSpecValidator(stage.ARGS, mutually_exclusive=stage.MUTUALLY_EXCLUSIVE, required_one_of=stage.REQUIRED_ONE_OF),
        group_secret=module.params["group_secret"],
    )
    try:
        return stage.run(p)
    except stage.StageFailed as exc:
        module.fail_json(**exc.fields)


def do_group_gate(module: AnsibleModule, job: dict) -> dict:
    """State ``gate`` with ``group_wait``: wait for the job's coordinator (on this server) to open the gate; stop the job
    when it has not in time."""
    p = module.params
    if module.check_mode:
        return dict(changed=True, job_id=job["job_id"])
    directory = files.job_dir(p["job_root"], job["job_id"])
    found = group.gate_answer(group.wait_gate(directory, p["group_wait"]), p["group_wait"])
    if found.get("failed"):
        if (found.get("group") or {}).get("status") == group.FORMING:
            files.record_abort(directory, found["msg"])  # the coordinator's supervisor passes it on: every staged rank is released
        module.fail_json(job_id=job["job_id"], **found)
    return dict(found, job_id=job["job_id"])


def do_results(module: AnsibleModule) -> dict:
    """State ``results``: ``training_results``' work (it removes the supervisor's result file: not in check mode)."""
    return job_results.run(nested(module, "results", ArgumentSpecValidator(job_results.ARGS)))


def main() -> None:
    module = AnsibleModule(argument_spec=ARGS, required_if=REQUIRED_IF, required_together=REQUIRED_TOGETHER, supports_check_mode=True)
    p = module.params
    state = p["state"]
    try:
        if state == "preflight":
            try:
                module.exit_json(**preflight.run(module, p, check_mode=module.check_mode))
            except preflight.PreflightFailed as exc:
                module.fail_json(**exc.fields)
        if state == "record":
            module.exit_json(**do_record(module))
        if state == "stage":
            module.exit_json(**do_stage(module))
        if state == "results":
            module.exit_json(**do_results(module))
        if state == "stop":
            module.exit_json(**control.stop_jobs(p["job_root"], p["job_id"], p["grace"], p["reason"], module.check_mode))
        job = control.load_job(p["job_root"], p["job_id"])
        if state == "staged":
            ranks = control.wait_staged(p["job_root"], job, p["timeout"])
            failure = control.staging_failure(ranks, control.left_behind(p["job_root"], job, p["lock_dir"]))
            if failure:
                module.fail_json(msg=failure, job_id=job["job_id"], ranks=ranks)
            module.exit_json(changed=False, job_id=job["job_id"], ranks=ranks)
        if state == "diagnose":
            module.exit_json(**job_diagnose.diagnose(module, p, job))
        if state == "gate" and p["group_wait"] is not None:
            module.exit_json(**do_group_gate(module, job))
        if state == "gate":
            if not module.check_mode:
                control.open_gate(p["job_root"], job, p["start_at"])
            module.exit_json(changed=True, job_id=job["job_id"], start_at=p["start_at"])
        found = control.poll(
            p["job_root"], job, p["grace"], state == "poll", p["fail_fast"], p["tail_lines"], p["tail_failed"], module.check_mode
        )
        if state == "status":  # the job's group as this server's files show it: a crashed or lost coordinator is named
            found["group_health"] = group.health(files.job_dir(p["job_root"], job["job_id"]))
        module.exit_json(**found)
    except control.JobError as exc:
        module.fail_json(msg=str(exc))


if __name__ == "__main__":
    main()
