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
author:
  - ascend.cluster contributors (!UNKNOWN)
options:
  path:
    description: Where the table goes, the file that C(RANK_TABLE_FILE) names.
    type: path
    required: true
  content:
    description: The table's text, JSON (as C(to_nice_json) writes it).
    type: str
    required: true
  mode:
    description: The file's permission bits, octal (V(0644)); the directory, when created, gets V(0755).
    type: str
    default: "0644"
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
"""

EXAMPLES = r"""
- name: Write the rank table built on the controller
  ascend.cluster.rank_table_file:
    path: /etc/ascend/rank_table.json
    content: "{{ ascend_rank_table | to_nice_json(indent=4) }}\n"
  become: true
"""

RETURN = r"""
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
  returned: success
  sample: {"before": "", "after": "{\n    \"version\": \"1.0\", ...}\n"}
"""

import json

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.ascend.cluster.plugins.module_utils._text_file import apply_text_file


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type="path", required=True),
            content=dict(type="str", required=True),
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
        json.loads(text)
    except ValueError as exc:
        module.fail_json(msg="content is not JSON (%s): pass the table through to_nice_json" % exc)
    try:
        applied = apply_text_file(path, text, mode, check_mode=module.check_mode)
    except OSError as exc:
        module.fail_json(msg="cannot write %s: %s; run the task as root (become) or choose another path" % (path, exc))
    steps = applied["steps"]
    diff = {"before_header": path, "after_header": path, "before": applied["before"] or "", "after": text}
    module.exit_json(changed=bool(steps), path=path, steps=steps, diff=diff)


if __name__ == "__main__":
    main()
