#!/usr/bin/python
# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Module hccn_config: set the device IP, netmask, gateway and netdetect address of Ascend NPUs."""

from __future__ import annotations

DOCUMENTATION = r"""
module: hccn_config
short_description: Set the device IP, gateway and netdetect address of the Ascend NPUs of a host
version_added: 0.1.0
description:
  - Brings the NIC settings of the listed NPUs to the wanted values through the driver's C(hccn_tool) -
    address and netmask (C(-ip -s)), default gateway (C(-gateway -s)) and netdetect target (C(-netdetect -s)).
  - One task configures every listed device of the host. The current values are read from the devices
    (concurrently), and only the values that differ are set, so a second run reports no change.
  - Every wanted value is checked before anything is set, for all devices at once; one bad value
    fails the task and sets nothing. The checks follow what C(hccn_tool) refuses - the address and
    the netdetect target must be unicast host addresses (not the network or broadcast address),
    192.168.1.0/24 is reserved for the device's internal vNIC, the gateway must be inside the device
    subnet, and two devices may not share an address.
  - Sets run in the order address, then gateway (the gateway must be inside the new subnet, so it is
    set again whenever the address changes), then netdetect. Address moves between devices of the
    host are ordered so that no device takes an address another still holds.
  - After setting, the devices are read back; the task fails if a device does not report what was set.
  - A device's gateway and netdetect address are only read (and compared) when the entry asks for
    them or O(hccn_conf) is compared with the devices; a run that manages addresses only, without
    that file, costs one C(hccn_tool) call per device.
  - A stale O(hccn_conf) is rewritten from the devices, as C(hccn_tool) writes it. When the file exists
    (and O(rewrite_stale_conf) is on), every field of every listed device is read and compared with the
    file's C(address_N), C(netmask_N), C(gateway_N) and C(netdetect_N) lines. A line that disagrees
    with a device whose value is already right (the file is stale, the device is the truth) is fixed
    by setting that value again - C(hccn_tool) rewrites the key's line on every set. That is a change
    (with a diff of the file, and nothing run in check mode); afterwards the file is read again, and
    the task fails when it still disagrees (C(hccn_tool) then writes another file than O(hccn_conf)).
    A line naming a gateway or netdetect address the device does not have cannot be fixed that way
    (C(hccn_tool) removes neither); the task warns, naming the line to delete.
  - The checks use Python's standard C(ipaddress) module because target hosts usually lack netaddr;
    the role C(ascend.cluster.device_ip) also checks the whole cluster's plan on the controller (with
    netaddr, duplicates across servers included) before any host is touched.
author:
  - ascend.cluster contributors (!UNKNOWN)
options:
  devices:
    description:
      - The wanted settings, one entry per device. Devices not listed are left alone.
    type: list
    elements: dict
    required: true
    suboptions:
      device_id:
        description: Physical device id (the C(hccn_tool -i) number, 0 to 15).
        type: int
        required: true
      address:
        description: Device IPv4 address.
        type: str
        required: true
      netmask:
        description: Netmask, dotted (V(255.255.255.0)) or as a prefix length (V(24)).
        type: str
        required: true
      gateway:
        description:
          - Default gateway of the device, inside its subnet.
          - Empty or omitted leaves the device's gateway as it is (C(hccn_tool) cannot remove one).
        type: str
        default: ""
      netdetect:
        description:
          - Address the device probes to report its network health (usually the gateway, or the
            same device of a peer server).
          - Empty or omitted leaves the device's netdetect address as it is.
        type: str
        default: ""
  rewrite_stale_conf:
    description:
      - Compare O(hccn_conf) with the listed devices and set again the values whose line in the file
        is stale, so that C(hccn_tool) rewrites them (see the description).
      - V(false) leaves the file alone and reads only what the entries manage.
    type: bool
    default: true
  parallel:
    description:
      - How many C(hccn_tool) calls may run at the same time (at least 1).
      - Reads run concurrently across devices; sets run concurrently within one phase (address,
        gateway, netdetect).
    type: int
    default: 16
  facts:
    description:
      - This host's C(ascend_npu) facts (M(ascend.cluster.hccn_facts)), read in this run after the last change to its
        devices. When they already show every listed device as wanted (address, netmask, and the gateway and netdetect
        given), with no stale O(hccn_conf) line and read from that same file, the task is skipped on the controller,
        without a round trip (the action plugin decides; see P(ascend.cluster.device_ip_settled#filter)).
      - Empty (the default), or anything unsure, and the module runs and decides.
    type: dict
    default: {}
    version_added: 0.2.0
extends_documentation_fragment:
  - ascend.cluster.tools
  - ascend.cluster.hccn_calls
attributes:
  check_mode:
    support: full
    description: Reads the devices and reports what would change; runs no set command.
  diff_mode:
    support: full
    description:
      - Returns the address and netmask of each listed device before and after, plus its gateway and netdetect
        when they are managed (or O(hccn_conf) is compared); and the O(hccn_conf) file before and after.
  platform:
    support: full
    platforms: posix
    description: Linux hosts with the Ascend NPU driver.
  idempotent:
    support: full
    description: Only values that differ from what the devices report are set.
notes:
  - C(hccn_tool) also writes every set value to C(/etc/hccn.conf); the devices are the truth and
    are what this module compares against. O(hccn_conf) names the file to keep in line with them
    (point it at the file the driver writes).
  - An address swap between two devices of a host cannot be done in one run (C(hccn_tool) refuses
    an address another device holds); the task says so and changes nothing.
  - Devices that are not listed are not read. If one of them holds an address the plan gives to a
    listed device, C(hccn_tool) refuses that set (C(conflicted)); list every device of the host
    (the plans the C(ascend.cluster.device_ip_plan) filter computes do) to have such moves ordered for you.
seealso:
  - module: ascend.cluster.hccn_facts
  - name: Huawei hccn_tool reference
    description: Commands and exit codes of the driver's network tool.
    link: https://support.huawei.com/enterprise/zh/doc/EDOC1100221413
"""

EXAMPLES = r"""
- name: Server 0 of the seed's 2 x 8 Atlas 800 cluster (SMP layout)
  ascend.cluster.hccn_config:
    devices:
      - {device_id: 0, address: 192.168.100.101, netmask: 255.255.255.0}
      - {device_id: 1, address: 192.168.101.101, netmask: 255.255.255.0}
      - {device_id: 2, address: 192.168.102.101, netmask: 255.255.255.0}
      - {device_id: 3, address: 192.168.103.101, netmask: 255.255.255.0}
      - {device_id: 4, address: 192.168.100.100, netmask: 255.255.255.0}
      - {device_id: 5, address: 192.168.101.100, netmask: 255.255.255.0}
      - {device_id: 6, address: 192.168.102.100, netmask: 255.255.255.0}
      - {device_id: 7, address: 192.168.103.100, netmask: 255.255.255.0}

- name: One subnet with gateway and netdetect, driver outside PATH
  ascend.cluster.hccn_config:
    hccn_tool: /opt/ascend/driver/tools/hccn_tool
    devices:
      - {device_id: 0, address: 10.20.0.11, netmask: 24, gateway: 10.20.0.1, netdetect: 10.20.0.1}
      - {device_id: 1, address: 10.20.0.12, netmask: 24, gateway: 10.20.0.1, netdetect: 10.20.0.1}

- name: Apply this host's entry of a plan built by the device_ip_plan filter
  ascend.cluster.hccn_config:
    devices: "{{ plan[inventory_hostname] }}"
"""

RETURN = r"""
changed:
  description: Whether a value was set (or would be, in check mode).
  type: bool
  returned: always
  sample: true
devices:
  description: One entry per listed device, by device id.
  type: list
  elements: dict
  returned: always
  contains:
    device_id:
      description: Physical device id.
      type: int
      sample: 0
    changed:
      description: Whether this device needed a set.
      type: bool
      sample: true
    changes:
      description: The phases set on this device, in order (V(ip), V(gateway), V(netdetect)).
      type: list
      elements: str
      sample: [ip, gateway]
    commands:
      description: The C(hccn_tool) command lines run (or, in check mode, that would run).
      type: list
      elements: str
      sample: ["/usr/local/Ascend/driver/tools/hccn_tool -i 0 -ip -s address 192.168.100.101 netmask 255.255.255.0"]
    stale_conf_keys:
      description:
        - The O(hccn_conf) keys of this device (V(address), V(netmask), V(gateway), V(netdetect)) whose line
          disagreed with the device and is rewritten by setting the device's value again.
      type: list
      elements: str
      sample: [address]
    before:
      description:
        - What the device reported before - V(address) and V(netmask), and V(gateway) / V(netdetect) when
          the entry manages them; empty strings when unset.
      type: dict
      sample: {"address": "", "netmask": "", "gateway": ""}
    after:
      description: What the device reports after the change (read back); in check mode, what it would report.
      type: dict
      sample: {"address": "192.168.100.101", "netmask": "255.255.255.0", "gateway": "192.168.100.1"}
diff:
  description:
    - Shown with C(--diff). First, per device (key V(device N)), the values before and after; then, when
      O(hccn_conf) was compared with the devices, the file's text before and after (in check mode, as
      C(hccn_tool) would leave it).
  type: list
  elements: dict
  returned: always
  sample:
    - {"before": {"device 0": {"address": ""}}, "after": {"device 0": {"address": "192.168.100.101"}}}
    - {"before_header": /etc/hccn.conf, "after_header": /etc/hccn.conf, "before": "", "after": "address_0=192.168.100.101\n"}
hccn_tool:
  description: Path of the C(hccn_tool) used.
  type: str
  returned: always
  sample: /usr/local/Ascend/driver/tools/hccn_tool
problems:
  description: Every wrong wanted value, when the check before any change failed.
  type: list
  elements: str
  returned: failure
  sample: ["device 1: gateway 10.0.1.1 is outside the device subnet 10.0.0.0/24"]
applied:
  description: The set commands that succeeded before a set failed (they stay in place).
  type: list
  elements: str
  returned: failure
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.ascend.cluster.plugins.module_utils import _options as options
from ansible_collections.ascend.cluster.plugins.module_utils._hccn import tool as _hccn_tool
from ansible_collections.ascend.cluster.plugins.module_utils._hccn.config import ConfigError, Configurator


def main():
    module = AnsibleModule(
        argument_spec=options.spec(
            options.TOOL_PATHS,
            options.HCCN_CALLS,
            devices=dict(
                type="list",
                elements="dict",
                required=True,
                options=dict(
                    device_id=dict(type="int", required=True),
                    address=dict(type="str", required=True),
                    netmask=dict(type="str", required=True),
                    gateway=dict(type="str", default=""),
                    netdetect=dict(type="str", default=""),
                ),
            ),
            rewrite_stale_conf=dict(type="bool", default=True),
            parallel=dict(type="int", default=16),
            facts=dict(type="dict", default={}),  # used by the action plugin on the controller; the module does not need it
        ),
        supports_check_mode=True,
    )
    binary = _hccn_tool.find_binary(module, module.params["hccn_tool"])
    if binary is None:
        module.fail_json(msg=_hccn_tool.not_found_msg(module.params["hccn_tool"]), changed=False)
    tool = _hccn_tool.HccnTool(module, binary, timeout=module.params["timeout"])
    configurator = Configurator(module, tool)
    try:
        result = configurator.run()
    except ConfigError as exc:
        for warning in configurator.warnings:
            module.warn(warning)
        details = dict(exc.details)
        details.setdefault("changed", False)
        module.fail_json(msg=exc.msg, hccn_tool=binary, **details)
    for warning in configurator.warnings:
        module.warn(warning)
    module.exit_json(hccn_tool=binary, **result)


if __name__ == "__main__":
    main()
