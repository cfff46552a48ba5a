#!/usr/bin/python
# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Module support_bundle: the servers' parts of a job's support bundle, and what the run knows of each, in one archive."""

from __future__ import annotations

DOCUMENTATION = r"""
module: support_bundle
short_description: Assemble a job's support bundle on the controller
version_added: 0.2.0
description:
  - The controller side of C(ascend.cluster.collect) (docs/support-bundle.md), run there (C(delegate_to) C(localhost)).
  - Writes O(path), one C(tar.gz) (written aside and renamed; O(mode)) holding C(support-<job_id>/<host>/...) from each
    server's archive (M(ascend.cluster.support_files)), C(support-<job_id>/controller/...) from O(controller_files), and
    C(support-<job_id>/manifest.json) - every server's manifest, the servers that could not be reached or failed and why,
    the controller's files.
  - A member whose name would leave its server's folder is not copied.
author:
  - ascend.cluster contributors (!UNKNOWN)
options:
  path:
    description: The bundle to write.
    type: path
    required: true
  job_id:
    description: The job (the bundle's folder is C(support-<job_id>)).
    type: str
    required: true
  parts:
    description:
      - "Each server's registered M(ascend.cluster.support_files) result, C({host: result}) - unreachable and failed ones
        too; they are named in the manifest with why."
    type: dict
    required: true
  fetched:
    description: "Each server's registered C(ansible.builtin.fetch) result of its archive, C({host: result})."
    type: dict
    default: {}
  parts_dir:
    description: Where the fetch put each server's archive, as C(<parts_dir>/<host>.tar.gz).
    type: path
    required: true
  controller_files:
    description: "Files of the controller to add, C({name in the bundle: path}); a missing one is left out."
    type: dict
    default: {}
  mode:
    description: The bundle's mode.
    type: raw
    default: "0600"
attributes:
  check_mode:
    support: none
    description: Writes the bundle.
  diff_mode:
    support: none
    description: No diff.
  idempotent:
    support: none
    description: Each call writes the bundle anew.
"""

EXAMPLES = r"""
- name: Write the bundle
  ascend.cluster.support_bundle:
    path: /tmp/support-j1.tar.gz
    job_id: j1
    parts: "{{ dict(ansible_play_hosts_all | zip(ansible_play_hosts_all | map('extract', hostvars, 'part'))) }}"
    fetched: "{{ dict(ansible_play_hosts_all | zip(ansible_play_hosts_all | map('extract', hostvars, 'copied'))) }}"
    parts_dir: /tmp/parts
  delegate_to: localhost
  run_once: true
"""

RETURN = r"""
path:
  description: The bundle written.
  returned: success
  type: str
manifest:
  description: The bundle's manifest (C(job_id), C(servers), C(controller), C(unreachable), C(failed)).
  returned: success
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.ascend.cluster.plugins.module_utils._collect import bundle as support


def main() -> None:
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type="path", required=True),
            job_id=dict(type="str", required=True),
            parts=dict(type="dict", required=True),
            fetched=dict(type="dict", default={}),
            parts_dir=dict(type="path", required=True),
            controller_files=dict(type="dict", default={}),
            mode=dict(type="raw", default="0600"),
        ),
        supports_check_mode=False,
    )
    p = module.params
    try:
        mode = int(str(p["mode"]), 8)
    except ValueError:
        module.fail_json(msg="mode %r is not an octal mode" % p["mode"])
    try:
        servers = support.servers_from_results(p["parts"], p["fetched"], p["parts_dir"])
        manifest = support.bundle(p["path"], p["job_id"], servers, p["controller_files"], mode)
    except OSError as exc:
        module.fail_json(msg="cannot write %s: %s" % (p["path"], exc))
    module.exit_json(changed=True, path=p["path"], manifest=manifest)


if __name__ == "__main__":
    main()
