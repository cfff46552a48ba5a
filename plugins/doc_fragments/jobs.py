# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Options of the training job modules (training_job, training_rank, training_ranks, training_results,
training_watch).

``DOCUMENTATION`` (``ascend.cluster.jobs``) is the job records' directory, which all of them read;
``LOCK_DIR`` (``ascend.cluster.jobs.lock_dir``) the device locks, which training_rank and training_ranks
take and training_job checks; ``PREFLIGHT``, ``DIAGNOSE``, ``POLL`` and ``GATE`` the options of training_job's states of those
names, documented apart so that the module's file stays readable. The argument spec that goes with them is
``module_utils/_options.py`` (and the module's own ``ARGS``).
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

    # training_job state=preflight's own options (the pre-flight: module_utils/_job/preflight.py)
    PREFLIGHT = r"""
options:
  bank_dir:
    description: The AOE tuning repository's directory whose C(*_gradient_fusion.json) files V(preflight) counts; empty, not looked at.
    type: path
  clock_samples:
    description:
      - V(preflight) only, taken by the action on the controller (never sent to the server) - read the server's clock
        this many times first, as M(ascend.cluster.clock_offset) does; 0 does not read it.
    type: int
    default: 0
  clock_warn_above:
    description: V(preflight) with O(clock_samples) - warn when the offset is larger (seconds).
    type: float
    default: 1.0
  clock_refuse_above:
    description: V(preflight) with O(clock_samples) - the offset beyond which the status in RV(clock) is V(refuse) (seconds).
    type: float
    default: 30.0
  clock_allow:
    description: V(preflight) with O(clock_samples) - only warn about an offset beyond O(clock_refuse_above).
    type: bool
    default: false
  devices:
    description: Devices the job will use on this server (V(preflight)).
    type: list
    elements: int
    default: []
  ports:
    description:
      - TCP ports the job will listen on here, which nothing may listen on yet (V(preflight)) - HCCL's host
        ports and, on rank 0's server, the framework's master port. A port in use fails the pre-flight, naming
        who holds it; O(kill_stale) does not stop such a process.
      - With V(diagnose), ports to check besides those of the job's environment (RV(job_ports)); nothing fails.
    type: list
    elements: int
    default: []
  host_ip:
    description:
      - The address HCCL's host sockets bind here (C(HCCL_IF_IP)), checked by V(preflight) - it must be an
        address of this server (a NAT'd or jump C(ansible_host) in the rank table's C(server_id) is not). An empty
        value, or a name rather than an IPv4 address, is not checked.
    type: str
    default: ""
  nic:
    description:
      - The NIC HCCL's host sockets use (C(HCCL_SOCKET_IFNAME)), for V(preflight). When set it must exist and have
        an IPv4 address, which RV(host_ip) returns (an O(host_ip) given too must be that address).
    type: str
    default: ""
  kill_stale:
    description: Stop whatever holds the devices instead of failing (V(preflight)).
    type: bool
    default: false
  allow_unknown_health:
    description:
      - V(preflight) - go on when npu-smi cannot be read here (RV(npu_smi_problem)), without the chips' health and with
        the devices' holders read from job records and locks only; RV(npu_smi_status) is then V(allowed), not V(refuse).
    type: bool
    default: false
  cann_dir:
    description:
      - Where CANN is installed (the toolkit's and kernels' install directory), whose version files V(preflight) reads -
        C(<cann_dir>/ascend-toolkit/latest/<arch>-linux/ascend_toolkit_install.info) and
        C(<cann_dir>/ascend-toolkit/latest/opp_kernel/version.info), or from CANN 8.5
        C(<cann_dir>/cann/<arch>-linux/ascend_toolkit_install.info) and C(ascend_ops_install.info) beside it.
      - Unset, C(/usr/local/Ascend), and for a user other than root also C($HOME/Ascend).
    type: path
  stale_timeout:
    description: Seconds to wait for the devices to free after O(kill_stale).
    type: float
    default: 30.0
"""

    # training_job state=diagnose's own options (what a failed job left: module_utils/_job/evidence.py)
    DIAGNOSE = r"""
options:
  plog_dirs:
    description: More directories to look for plogs in (V(diagnose)), before the ones the rank's environment names.
    type: list
    elements: path
    default: []
  plog_lines:
    description: At most this many ERROR and WARNING lines of each rank's plog (V(diagnose)).
    type: int
    default: 200
  hccl_port_count:
    description:
      - V(diagnose) - how many HCCL host ports, from the job's C(HCCL_IF_BASE_PORT) (60000 when unset), RV(job_ports)
        counts - 16, 32 on newer CANN, 0 for none.
    type: int
    default: 16
"""

    # training_job state=poll's and state=status's own options (the ranks' states and logs: module_utils/_job/control.py)
    POLL = r"""
options:
  fail_fast:
    description:
      - With V(poll), stop the other local ranks once one has failed.
      - Unset, as the job was launched - its record's C(fail_fast) (M(ascend.cluster.training_ranks)'s
        O(ascend.cluster.training_ranks#module:fail_fast)), true for a job recorded without one.
    type: bool
    aliases: [stop_on_failure]
  tail_lines:
    description: Lines of each rank's log to return (V(poll) and V(status)).
    type: int
    default: 0
  tail_failed:
    description:
      - Lines of a failed rank's log to return (V(poll) and V(status)), when more than O(tail_lines).
      - With V(diagnose), lines of each failed or stopped rank's log.
    type: int
    default: 20
"""

    # training_job state=staged's and state=gate's own options (the wait at the gate, and the gate's opening)
    GATE = r"""
options:
  timeout:
    description: Seconds to wait for the ranks to stage (V(staged)).
    type: float
    default: 120.0
  start_at:
    description: Epoch time at which every rank starts (V(gate)).
    type: float
  group_wait:
    description:
      - V(gate) through the job's group, on the server that runs the job's coordinator - the coordinator opens the gate on
        every server by itself once every server has joined and staged every rank (each member writes its gate in its
        own clock); wait up to this many seconds for it and return RV(start_at), in the controller's clock.
      - When the gate is still shut then, the job is stopped (its abort file here, which the group passes to every
        member, so every staged rank is released) and the task fails naming what kept it shut - servers not joined,
        ranks not staged (RV(missing)).
      - For a named O(job_id) the action does this with shell commands over the task's connection, without the module.
    type: float
"""
