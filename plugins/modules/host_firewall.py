#!/usr/bin/python
# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Module host_firewall: disable the host firewall, or keep it up with only the training ports open."""

from __future__ import annotations

DOCUMENTATION = r"""
module: host_firewall
short_description: Disable the host firewall, or keep it up with only the training ports open
version_added: 0.1.0
description:
  - Settles the host firewall of an NPU server in one call - reads its state, plans only the
    commands still needed, runs them (none in check mode) and returns what was found and done.
    The role C(ascend.cluster.firewall) calls it once per host.
  - The firewall is C(ufw) on the Debian family and C(firewalld) on the RedHat family, openEuler
    and Kylin, told from C(/etc/os-release) (C(ID), then C(ID_LIKE)) unless O(backend) names it.
  - V(disable) does what the seed documents do - C(ufw disable), or C(systemctl disable --now firewalld).
  - V(none) changes nothing and reads nothing - the result says the firewall was not checked (the
    role's report row for simulated local clusters).
  - V(open_ports) keeps the firewall up and opens SSH, the HCCL host port range, the framework
    master ports and O(extra_ports), SSH first. C(ufw) gets the missing C(ufw allow) rules, then
    C(ufw --force enable) when it is off. C(firewalld) is started and enabled when it is not,
    then the missing ports are added to the saved (C(--permanent)) and the running configuration
    separately, so nothing needs C(--reload) (which would drop rules that are only running).
  - With V(open_ports) and O(reserve_hccl_ports), the HCCL range is also reserved in
    C(net.ipv4.ip_local_reserved_ports) (C(sysctl -w)), kept with what is reserved already, and
    persisted in O(sysctl_file) (written atomically, mode C(0644)), so ephemeral ports never take it.
  - Commands run in the order of RV(plan), as argument lists (never through a shell), with
    C(LC_ALL=C). The first that fails stops the task; the message names it, its error output and
    the commands that already ran.
author:
  - ascend.cluster contributors (!UNKNOWN)
options:
  mode:
    description:
      - V(disable) turns the firewall off (and off at boot); V(open_ports) keeps it up with only the training ports open;
        V(none) leaves it alone and reports it as not checked (no round trip to the host).
    type: str
    choices: [disable, open_ports, none]
    required: true
  refuse_local:
    description:
      - Refuse (fail, before anything is read) when the host is reached with the C(local) connection or its address is
        C(localhost), C(127.0.0.1) or C(::1) - the controller's own firewall - unless O(mode=none).
      - Checked on the controller by the action plugin. The role C(ascend.cluster.firewall) sets it unless
        C(ascend_firewall_allow_local=true); the refusal names that role's variables.
    type: bool
    default: false
    version_added: 0.2.0
  backend:
    description: The firewall to manage; V(auto) picks it from C(/etc/os-release) (an unknown OS fails the task).
    type: str
    choices: [auto, ufw, firewalld]
    default: auto
  ssh_port:
    description: The SSH port, opened first so that the connection survives enabling the firewall.
    type: int
    default: 22
  hccl_base_port:
    description: First port of HCCL's host TCP range (C(HCCL_IF_BASE_PORT)).
    type: int
    default: 60000
  hccl_port_count:
    description: Ports in the HCCL range, 16 (60000-60015) or 32 on newer CANN (60000-60031).
    type: int
    default: 16
  master_ports:
    description:
      - Framework rendezvous ports (torch C(MASTER_PORT) 29500, MindSpore C(msrun) 8118), and the job group coordinator of
        the C(ascend.cluster.launch_training) role (29700, its C(ascend_launch_group_port)).
    type: list
    elements: int
    default: [29500, 8118, 29700]
  extra_ports:
    description: More TCP ports or ranges to open (V(6006), V(9000-9010)).
    type: list
    elements: str
    default: []
  reserve_hccl_ports:
    description: With O(mode=open_ports), reserve the HCCL range in C(net.ipv4.ip_local_reserved_ports) and persist it.
    type: bool
    default: true
  sysctl_file:
    description: The file that persists the reservation (read at boot by C(systemd-sysctl) / C(sysctl --system)).
    type: path
    default: /etc/sysctl.d/60-ascend-hccl-ports.conf
  firewalld_zone:
    description: The firewalld zone that gets the ports; empty for the default zone.
    type: str
    default: ""
attributes:
  check_mode:
    support: full
    description:
      - Reads the state and returns the commands that would run; runs none and writes nothing.
      - A stopped firewalld cannot list its ports, so then every port is planned.
  diff_mode:
    support: full
    description: Returns the firewall's state, its rules or ports, the reserved ports and the sysctl file, before and after.
  platform:
    support: full
    platforms: posix
    description: Linux hosts with ufw or firewalld (firewalld through C(systemctl) and C(firewall-cmd)).
  idempotent:
    support: full
    description: Only missing rules, ports and reservations are added; a second run changes nothing.
notes:
  - Changing the firewall needs root (C(become)). The module refuses a host reached with the local
    connection (the controller's own firewall) only with O(refuse_local=true), as the role
    C(ascend.cluster.firewall) calls it.
  - An action plugin runs on the controller first - the O(refuse_local) check and O(mode=none) cost
    no round trip - then runs the module on the host; one task per host either way.
  - Each command may take up to 120 seconds.
  - Rules and ports already there are kept; nothing is removed.
"""

EXAMPLES = r"""
- name: Do what the seeds do - turn the firewall off
  ascend.cluster.host_firewall:
    mode: disable
  become: true

- name: Keep it up with only the training ports open (newer CANN, torch only, plus TensorBoard)
  ascend.cluster.host_firewall:
    mode: open_ports
    hccl_port_count: 32
    master_ports: [29500]
    extra_ports: ["6006"]
  become: true
  register: firewall

- name: Say what was found and done
  ansible.builtin.debug:
    msg: "{{ firewall.found }}: {{ firewall.action }}"
"""

RETURN = r"""
changed:
  description: Whether a command ran or the sysctl file was written (or would be, in check mode).
  type: bool
  returned: always
  sample: true
mode:
  description: The O(mode) applied.
  type: str
  returned: success
  sample: open_ports
backend:
  description: The firewall managed, V(ufw) or V(firewalld).
  type: str
  returned: success and O(mode) is not V(none)
  sample: ufw
found:
  description: The firewall's state before the task, as the role's report shows it.
  type: str
  returned: success
  sample: ufw inactive
ports:
  description: The TCP ports and ranges training needs, SSH first (what V(open_ports) opens).
  type: list
  elements: str
  returned: success and O(mode) is not V(none)
  sample: ["22", "60000-60015", "29500", "8118", "29700"]
plan:
  description: The commands needed, in the order they run (or would, in check mode), as argument lists.
  type: list
  elements: list
  returned: success and O(mode) is not V(none)
  sample: [["ufw", "allow", "22/tcp"], ["ufw", "allow", "60000:60015/tcp"], ["ufw", "--force", "enable"]]
action:
  description:
    - V(nothing to do), or C(would run:) (check mode) / C(ran:) followed by the commands of RV(plan)
      and C(write <sysctl_file>) when the file changes, joined by C(; ).
  type: str
  returned: success
  sample: "ran: ufw allow 22/tcp; ufw allow 60000:60015/tcp; ufw --force enable; sysctl -w net.ipv4.ip_local_reserved_ports=60000-60015"
diff:
  description: Before and after - the firewall's state, its rules (ufw) or saved and running ports (firewalld), the reserved ports and the sysctl file's text.
  type: dict
  returned: success and O(mode) is not V(none)
  sample: {"before": {"ufw": "inactive", "ufw rules": []}, "after": {"ufw": "active", "ufw rules": ["22/tcp"]}}
cmd:
  description: The command that failed.
  type: list
  elements: str
  returned: failure
  sample: ["ufw", "--force", "enable"]
ran:
  description: The commands that ran before the failing one (their changes stay).
  type: list
  elements: list
  returned: failure
  sample: [["ufw", "allow", "22/tcp"]]
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.ascend.cluster.plugins.module_utils._host.firewall import (
    BACKENDS,
    MODE_NONE,
    MODES,
    NOT_CHECKED,
    FirewallError,
    HostFirewall,
)

# The action plugin of the same name validates against this spec too (one spec, two sides).
ARGS = dict(
    mode=dict(type="str", choices=[*MODES, MODE_NONE], required=True),
    refuse_local=dict(type="bool", default=False),
    backend=dict(type="str", choices=list(BACKENDS), default="auto"),
    ssh_port=dict(type="int", default=22),
    hccl_base_port=dict(type="int", default=60000),
    hccl_port_count=dict(type="int", default=16),
    master_ports=dict(type="list", elements="int", default=[29500, 8118, 29700]),
    extra_ports=dict(type="list", elements="str", default=[]),
    reserve_hccl_ports=dict(type="bool", default=True),
    sysctl_file=dict(type="path", default="/etc/sysctl.d/60-ascend-hccl-ports.conf"),
    firewalld_zone=dict(type="str", default=""),
)


def main():
    module = AnsibleModule(argument_spec=ARGS, supports_check_mode=True)
    if module.params["mode"] == MODE_NONE:  # the action plugin answers this on the controller; here for completeness
        module.exit_json(changed=False, **NOT_CHECKED)
    try:
        result = HostFirewall(module.params, check_mode=module.check_mode).run()
    except FirewallError as exc:
        details = dict(exc.details)
        details.setdefault("changed", False)
        module.fail_json(msg=exc.msg, **details)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
