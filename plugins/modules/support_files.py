#!/usr/bin/python
# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Module support_files: what a training job left on one server, scrubbed and capped, in one archive."""

from __future__ import annotations

DOCUMENTATION = r"""
module: support_files
short_description: Gather one server's part of a job's support bundle into one archive
version_added: 0.2.0
description:
  - The server side of C(ascend.cluster.collect) (docs/support-bundle.md). For the job O(job_id) (V(latest) as
    C(ascend.cluster.status) reads it), writes one C(tar.gz) (mode 0600) in a new directory under O(tmp_dir) with
    C(manifest.json) - what was collected from where, what failed and why, what the size cap dropped or cut, which
    variables were scrubbed.
  - It holds the job's record and group view (never C(group.key), the job's secret), each rank's C(state.json),
    C(env.log) (scrubbed), C(error.json) and C(train.log), each node runner's files, the job's rank table, C(npu-smi info),
    C(-t health) and C(-t board) of every NPU, C(hccn_tool) C(-link), C(-net_health), C(-ip) and C(-tls) of the job's
    devices, the driver, firmware and CANN version files, the C(dmesg) lines of the job's window, the plogs and device
    logs of that window and, where installed, the device logs C(msnpureport) exports.
  - In C(env.log) the value of every variable whose name looks secret (a word C(KEY), C(TOKEN), C(SECRET), C(PASSWORD),
    C(PASSWD), C(CREDENTIAL), C(AUTH), C(COOKIE), C(PRIVATE); or C(TOKEN), C(SECRET), C(PASSWORD), C(APIKEY) anywhere in it)
    is replaced by C(***scrubbed***). Logs are collected as written - a secret a training printed stays in its log.
  - Changes nothing on the server but the archive, which the playbook fetches and removes.
author:
  - ascend.cluster contributors (!UNKNOWN)
options:
  job_id:
    description: The job, or V(latest).
    type: str
    default: latest
  max_bytes:
    description:
      - This server's cap in bytes. Items are taken in the order above; a log that does not fit keeps its tail while
        4096 bytes or more are left; anything else is dropped and listed in the manifest.
    type: int
    default: 209715200
  margin:
    description: Seconds added before and after the job's window (its first stage to its last end; now while it runs).
    type: float
    default: 300
  timeout:
    description: Seconds each C(npu-smi), C(hccn_tool) or C(dmesg) call may take.
    type: int
    default: 30
  msnpureport:
    description: Run C(msnpureport) where installed (false - no device logs from it).
    type: bool
    default: true
  msnpureport_path:
    description: The tool; unset - C(<driver install dir>/driver/tools/msnpureport) (C(/etc/ascend_install.info)), then E(PATH).
    type: path
  msnpureport_timeout:
    description: Seconds C(msnpureport) may take.
    type: int
    default: 600
  plog_dirs:
    description: More directories to take plogs from, before the ones the ranks' C(env.log) name.
    type: list
    elements: path
    default: []
  cann_dir:
    description: Where CANN and the driver are installed (for the version files); unset - C(/usr/local/Ascend).
    type: path
  tmp_dir:
    description: Where the archive's directory is made; unset - the system's temporary directory.
    type: path
extends_documentation_fragment:
  - ascend.cluster.tools
  - ascend.cluster.jobs
attributes:
  check_mode:
    support: none
    description: Runs the tools and writes the archive.
  diff_mode:
    support: none
    description: No diff.
  idempotent:
    support: none
    description: Each call writes a new archive.
"""

EXAMPLES = r"""
- name: Gather this server's part of the job's support bundle
  ascend.cluster.support_files:
    job_id: latest
    max_bytes: 104857600
  register: part
"""

RETURN = r"""
archive:
  description: The archive on the server (mode 0600); fetch it, then remove its directory.
  returned: success
  type: str
job_id:
  description: The job collected.
  returned: success
  type: str
manifest:
  description:
    - C(collected) (C({path, source, bytes}), with C(truncated) and C(original_bytes) for a log cut to its tail, C(scrubbed)
      for an C(env.log)), C(failed) (C({what, why})), C(dropped) (C({path, source, bytes, why})), C(scrubbed) (C(<file> - <name>) pairs as text),
      C(max_bytes), C(bytes), C(window) (C({start, end}) in the server's clock), C(never) (the files never collected).
  returned: success
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.ascend.cluster.plugins.module_utils import _options as options
from ansible_collections.ascend.cluster.plugins.module_utils._collect import files as support
from ansible_collections.ascend.cluster.plugins.module_utils._job import control

ARGS = options.spec(
    options.TOOL_PATHS,
    options.JOB_ROOT,
    job_id=dict(type="str", default="latest"),
    max_bytes=dict(type="int", default=support.DEFAULT_MAX_BYTES),
    margin=dict(type="float", default=300.0),
    timeout=dict(type="int", default=30),
    msnpureport=dict(type="bool", default=True),
    msnpureport_path=dict(type="path"),
    msnpureport_timeout=dict(type="int", default=600),
    plog_dirs=dict(type="list", elements="path", default=[]),
    cann_dir=dict(type="path"),
    tmp_dir=dict(type="path"),
)


def main() -> None:
    module = AnsibleModule(argument_spec=ARGS, supports_check_mode=False)
    if module.params["max_bytes"] < 0:
        module.fail_json(msg="max_bytes must be 0 or more")
    try:
        result = support.collect(module.params)
    except control.JobError as exc:
        module.fail_json(msg=str(exc))
    module.exit_json(changed=True, **result)


if __name__ == "__main__":
    main()
