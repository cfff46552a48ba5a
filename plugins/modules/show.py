#!/usr/bin/python
# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Documentation of the show action (it runs on the controller; there is no target side)."""

from __future__ import annotations

DOCUMENTATION = r"""
module: show
short_description: Print a table or summary line that every stdout callback shows, quiet settings included
version_added: 0.2.0
description:
  - Runs on the controller. Returns O(msg) as RV(msg), as C(ansible.builtin.debug) does, so the JSON and YAML
    callbacks, AWX and the C(ascend.cluster.compact) callback receive it as data.
  - C(ansible.builtin.debug) results are C(ok) results, which the default callback drops under
    C(ANSIBLE_DISPLAY_OK_HOSTS=false) (C(display_ok_hosts = false) in C(ansible.cfg)). When the stdout callback in
    use hides C(ok) results that way, this action prints the lines itself, so they appear exactly once whatever the
    setting, and the task still reports C(ok), never C(changed).
  - The roles of this collection print their tables and summary lines with it.
author:
  - ascend.cluster contributors (!UNKNOWN)
options:
  msg:
    description: The lines to print, a list (one line each) or a string.
    type: raw
    required: true
extends_documentation_fragment:
  - ascend.cluster.attributes.read_only
attributes:
  action:
    support: full
    description: Runs on the controller only.
  check_mode:
    support: full
    description: Only prints.
"""

EXAMPLES = r"""
- name: Print the job's summary line, also under ANSIBLE_DISPLAY_OK_HOSTS=false
  ascend.cluster.show:
    msg: "{{ summary.table + [summary.line] }}"
  run_once: true
"""

RETURN = r"""
msg:
  description: O(msg), as given.
  returned: always
  type: raw
  sample: ["train 20261124T050000: 16/16 ranks done in 3.1 s"]
"""
