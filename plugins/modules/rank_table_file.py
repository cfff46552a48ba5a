#!/usr/bin/python
# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Module rank_table_file: write the HCCL rank table to a server in one call."""

from __future__ import annotations

DOCUMENTATION = r"""
module: rank_table_file
short_description: Write the HCCL rank table to a server in one call
version_added: 0.1.0
description:
  - Writes the rank table's JSON text to O(path) - creating its directory when it is missing, then
    writing the file atomically (a temporary file beside it, renamed over it) with O(mode) - or
    only fixes the mode when the text is already there. One module call per host, where
    C(ansible.builtin.file) and C(ansible.builtin.copy) take three (directory, checksum, attributes).
  - The text is checked to be JSON before anything is touched; the role C(ascend.cluster.rank_table)
    builds it with the C(ascend.cluster.rank_table) filter, which applies HCCL's rules.
  - Refused, before anything is touched (also in check mode), while a job of ours holds devices of the server - a job
    recorded under O(job_root) with a rank staged or running, or a device lock held in O(lock_dir) (a launch staging) -
    naming every such job and its devices. This is the shared table (C(/etc/ascend/rank_table.json)), which prepare and
    rank_table write; a launch writes its job's own copy into the job's run directory and its ranks read only that one.
author:
  - ascend.cluster contributors (!UNKNOWN)
options:
  path:
    description: Where the table goes, the file that C(RANK_TABLE_FILE) names.
    type: path
    required: true
  content:
    description:
      - The table's text, JSON (as C(to_nice_json) writes it).
      - Left out, the module only checks that no job holds the server's devices (the refusal above) and writes nothing -
        what C(ascend.cluster.prepare) runs on every server before its first stage changes anything.
    type: str
  mode:
    description: The file's permission bits, octal (V(0644)); the directory, when created, gets V(0755).
    type: str
    default: "0644"
extends_documentation_fragment:
  - ascend.cluster.jobs
  - ascend.cluster.jobs.lock_dir
attributes:
  check_mode:
    support: full
    description: Reads the file and says what would change; writes nothing.
  diff_mode:
    support: full
    description: Returns the file's text before and after.
  platform:
    support: full
    platforms: posix
    description: Any POSIX host (the rank table is a plain file).
  idempotent:
    support: full
    description: The same text and mode a second time change nothing.
notes:
  - Writing under C(/etc) needs root (C(become)).
  - O(job_root) and O(lock_dir) must be the launch's (the C(ascend.cluster.launch_training) role's
    C(ascend_launch_job_root) and C(ascend_launch_lock_dir)); elsewhere the jobs are not seen.
"""

EXAMPLES = r"""
- name: Write the rank table built on the controller
  ascend.cluster.rank_table_file:
    path: /etc/ascend/rank_table.json
    content: "{{ ascend_rank_table | to_nice_json(indent=4) }}\n"
  become: true

- name: Only check that no job holds this server's devices (refused naming the job; nothing is written)
  ascend.cluster.rank_table_file:
    path: /etc/ascend/rank_table.json
"""

RETURN = r"""
jobs:
  description: The jobs that hold devices of the server, one line each (C(job <id> holds devices 0, 1)), when refused for them.
  returned: when refused for a job, and without O(content)
  type: list
  elements: str
  sample: ["job 20261127T001500-4711 holds devices 0, 1, 2, 3"]
changed:
  description: Whether the directory was created, the file written or its mode fixed (or would be, in check mode).
  type: bool
  returned: always
  sample: false
path:
  description: The file written.
  type: str
  returned: success
  sample: /etc/ascend/rank_table.json
steps:
  description: What was (or would be) done, in order - V(mkdir), V(write), V(chmod); empty when nothing was.
  type: list
  elements: str
  returned: success
  sample: ["mkdir", "write"]
diff:
  description: The file's text before (empty when it did not exist) and after.
  type: dict
  returned: success, with O(content)
  sample: {"before": "", "after": "{\n    \"version\": \"1.0\", ...}\n"}
"""

import json

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.ascend.cluster.plugins.module_utils import _options as options
from ansible_collections.ascend.cluster.plugins.module_utils._host.text_file import apply_text_file
from ansible_collections.ascend.cluster.plugins.module_utils._job.preflight import server_jobs

# The refusal while a job holds the server's devices (docs/when-it-fails.md quotes it).
HELD = (
    "the rank table %s is not rewritten while a job holds this server's devices, nothing was changed: %s. "
    "Wait until the job ends (ascend.cluster.status shows it), or stop it (ascend.cluster.stop, given the job's id), "
    "then write the table again"
)


def main():
    module = AnsibleModule(
        argument_spec=options.spec(
            options.JOB_ROOT,
            options.LOCK_DIR,
            path=dict(type="path", required=True),
            content=dict(type="str"),
            mode=dict(type="str", default="0644"),
        ),
        supports_check_mode=True,
    )
    path, text = module.params["path"], module.params["content"]
    try:
        mode = int(module.params["mode"], 8)
    except ValueError:
        module.fail_json(msg="mode %r is not octal permission bits: give it as 0644" % module.params["mode"])
    try:
        if text is not None:
            json.loads(text)
    except ValueError as exc:
        module.fail_json(msg="content is not JSON (%s): pass the table through to_nice_json" % exc)
    jobs = server_jobs(module.params["job_root"], module.params["lock_dir"])
    if jobs:
        module.fail_json(msg=HELD % (path, "; ".join(jobs)), jobs=jobs)
    if text is None:  # only the check
        module.exit_json(changed=False, path=path, steps=[], jobs=[])
    try:
        applied = apply_text_file(path, text, mode, check_mode=module.check_mode)
    except OSError as exc:
        module.fail_json(msg="cannot write %s: %s; run the task as root (become) or choose another path" % (path, exc))
    steps = applied["steps"]
    diff = {"before_header": path, "after_header": path, "before": applied["before"] or "", "after": text}
    module.exit_json(changed=bool(steps), path=path, steps=steps, diff=diff)


if __name__ == "__main__":
    main()
