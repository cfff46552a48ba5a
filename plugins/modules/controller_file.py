#!/usr/bin/python
# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Documentation of the controller_file action (it runs on the controller; there is no target side)."""

from __future__ import annotations

DOCUMENTATION = r"""
module: controller_file
short_description: Write a small text file (or make a directory) on the controller, without a module run
version_added: 0.2.0
description:
  - Runs on the controller, in the task's worker - no connection, no module sent to C(localhost). Writes O(content) to
    O(path) atomically (a temporary file beside it, renamed over it) with O(mode), making the missing directories
    (mode 0755); without O(content) it makes O(path) a directory.
  - What C(ansible.builtin.copy) / C(ansible.builtin.file) with C(delegate_to=localhost) did for the job's
    controller-side files (the job directory, C(latest), C(summary.json), the rank table's copy), each of which ran
    Python modules on the controller.
author:
  - ascend.cluster contributors (!UNKNOWN)
options:
  path:
    description: The file (or, without O(content), the directory) on the controller; C(~) is expanded.
    type: path
    required: true
  content:
    description: The file's text; unset makes O(path) a directory.
    type: str
  mode:
    description: Permission bits, octal (V(0644) for a file, V(0755) for a directory by default).
    type: str
attributes:
  check_mode:
    support: full
    description: Says what would change; writes nothing.
  action:
    support: full
    description: The whole task is the action, in the task's worker on the controller.
  diff_mode:
    support: none
    description: No diff.
  idempotent:
    support: full
    description: The same text and mode a second time change nothing.
"""

EXAMPLES = r"""
- name: Write the summary for CI
  ascend.cluster.controller_file:
    path: "{{ ascend_launch_controller_dir }}/{{ ascend_job_id }}/summary.json"
    content: "{{ ascend_job_summary | to_nice_json }}\n"
  run_once: true

- name: Make a directory on the controller
  ascend.cluster.controller_file:
    path: "{{ ascend_launch_controller_dir }}/tune_bank"
  run_once: true
"""

RETURN = r"""
path:
  description: The file or directory, C(~) expanded.
  returned: success
  type: str
  sample: /home/alice/.ansible/ascend-jobs/latest
steps:
  description: What was (or would be) done - V(mkdir), V(write), V(chmod); empty when nothing was.
  returned: success
  type: list
  elements: str
  sample: ["write"]
"""
