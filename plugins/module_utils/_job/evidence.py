# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a failed job left on one server, read only (``training_job state=diagnose``, for ``playbooks/diagnose.yml``).

Runs on target hosts: Python 3.8+, stdlib only.
"""

from __future__ import annotations

import os
from typing import Any

from ansible_collections.ascend.cluster.plugins.module_utils._host import listen_ports, packet_filter
from ansible_collections.ascend.cluster.plugins.module_utils._job import control, files, group, plog, preflight
from ansible_collections.ascend.cluster.plugins.module_utils._job import env as job_env
from ansible_collections.ascend.cluster.plugins.module_utils._job.torch_error import read_error_file


def diagnose(module: Any, p: dict, job: dict) -> dict:
    """``training_job state=diagnose`` (``p``: its parameters), read-only: the ranks, the log tail and plog lines of each
    failed or stopped one, the devices' holders, the job's ports in use and the packet filter's rules against them, the
    group's cause and its health here (``_job.group.health``: a crashed or lost coordinator); ``module`` runs npu-smi and
    is warned when it cannot be read."""
    ranks = control.rank_states(p["job_root"], job)
    ports: dict = {}
    for rank in ranks:
        state = files.read_json(os.path.join(os.path.dirname(rank["log"]), files.STATE_FILE))
        state = state if isinstance(state, dict) else {}
        # a launcher's ranks share its node directory's env.log
        env = plog.read_env_log(os.path.join(state.get("node_dir") or os.path.dirname(rank["log"]), files.ENV_LOG))
        for port, what in job_env.job_ports(env, p["hccl_port_count"]).items():
            ports.setdefault(port, what)
        if rank["state"] in ("failed", "stopped"):
            rank["tail"] = control.tail(rank["log"], p["tail_failed"])
            rank["plog"] = plog.rank_plog(rank["pid"], env, p["plog_dirs"], p["plog_lines"], state.get("pids"))
            # the exception torch's @record wrote (TORCHELASTIC_ERROR_FILE, the pytorch preset), when the rank wrote one
            torch_error = read_error_file(os.path.join(os.path.dirname(rank["log"]), files.ERROR_FILE))
            if torch_error:
                rank["torch_error"] = torch_error
    for port in p["ports"]:
        ports.setdefault(port, "given in ports")
    devices = sorted(set(r["device_id"] for r in ranks))
    info, problem = preflight.read_npu(module, p["npu_smi"])
    if problem:
        module.warn("%s: the processes holding the job's devices are read from job records and locks only" % problem)
    busy = preflight.find_busy(devices, p["lock_dir"], p["job_root"], info["processes"] if info else [])
    taken = listen_ports.ports_in_use(sorted(ports))
    # on rank 0's server: the job's group's first failure, as its coordinator decided it (what the FAILED line names)
    view = files.read_json(os.path.join(files.job_dir(p["job_root"], job["job_id"]), files.GROUP_FILE))
    return dict(
        changed=False,
        job_id=job["job_id"],
        ranks=ranks,
        failed_rank=control.first_failure(ranks),
        abort=files.read_abort(files.job_dir(p["job_root"], job["job_id"])),
        busy=busy,
        npu_smi_problem=problem,
        ports_in_use=taken,
        job_ports=dict((str(port), ports[port]) for port in sorted(ports)),
        packet_filter=packet_filter.read(sorted(ports)),
        group_cause=view.get("cause") if isinstance(view, dict) else None,
        group_health=group.health(files.job_dir(p["job_root"], job["job_id"])),
    )
