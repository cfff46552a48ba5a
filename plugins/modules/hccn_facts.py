#!/usr/bin/python
# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Module hccn_facts: what each Ascend NPU's NIC reports, as ansible_facts.ascend_npu."""

from __future__ import annotations

DOCUMENTATION = r"""
module: hccn_facts
short_description: Gather the network facts of the Ascend NPUs of a host
version_added: 0.1.0
description:
  - Asks every NPU, through the driver's C(hccn_tool), for its device IP and netmask, gateway,
    netdetect address, network health and link state, and returns them as the
    C(ascend_npu) fact.
  - The device is the truth. C(/etc/hccn.conf) is only cross-checked against it (C(stale_conf)),
    or read instead of the devices, with a warning, when C(hccn_tool) is not installed.
  - Calls run concurrently (C(hccn_tool) is slow on real hardware), at most O(parallel) at a time.
  - A device with no IP, gateway or netdetect address set is a normal state and gives empty
    strings. A device that answers with an error is reported in its own entry (C(error) holds
    the raw stderr) instead of failing the task. An answer that cannot be parsed (a driver's
    variant not seen yet) fails nothing either - that query's fields of that device are null
    (unknown), the answer is kept in the device's C(unparsed) and named in a warning, and the
    checks that need the field (the net_health role, the smoke check, the device IP stage)
    refuse that device, naming the field and the answer. docs/real-outputs.md lists the variants read.
  - Devices are discovered with C(npu-smi info -l), falling back to the C(/dev/davinciN) nodes;
    the O(devices) option overrides discovery.
  - The facts also hold the versions every server of a multi-server job must share - the driver's (C(npu-smi info)'s
    header), the NPU firmware's (C(npu-smi info -t board -i <NPU id>), one call per NPU) and CANN's toolkit and kernels
    (their version files under O(cann_dir)).
author:
  - ascend.cluster contributors (!UNKNOWN)
options:
  devices:
    description:
      - Physical device ids to query (the C(hccn_tool -i) numbers, 0 to 15).
      - When unset, the devices reported by C(npu-smi info -l) (A3 boards with two chips per NPU
        count each chip), or else the C(/dev/davinciN) nodes.
    type: list
    elements: int
  gather:
    description:
      - Extra per-device queries; each costs one C(hccn_tool) call per device.
      - V(tls) adds C(tls_switch), C(tls_preconfigured) and C(tls_alarm_days) (from C(-tls -g));
        HCCL needs the TLS switch to be the same on every device.
      - V(mac) adds C(mac) (from C(-mac -g)).
    type: list
    elements: str
    choices: [tls, mac]
    default: []
  parallel:
    description:
      - How many C(hccn_tool) calls may run at the same time (at least 1; 1 runs them one by one).
      - The default lets every query of a 16-device server (5 or 6 per device) run at once. Each call
        mostly waits for the driver, so fewer at a time only adds rounds of waiting (see docs/benchmarks.md).
    type: int
    default: 128
  dev_dir:
    description:
      - Directory holding the C(davinciN) device nodes, for the discovery fallback (containers
        and tests may mount them elsewhere).
    type: path
    default: /dev
  cann_dir:
    description:
      - Where CANN is installed (the directory holding C(ascend-toolkit/), or from CANN 8.5 C(cann/)), whose version files
        give RV(ansible_facts.ascend_npu.cann_toolkit_version) and RV(ansible_facts.ascend_npu.cann_kernels_version).
      - Unset, C(/usr/local/Ascend), and for a user other than root also C($HOME/Ascend).
    type: path
extends_documentation_fragment:
  - ascend.cluster.tools
  - ascend.cluster.hccn_calls
attributes:
  check_mode:
    support: full
    description: The module only reads; it behaves the same in check mode.
  diff_mode:
    support: none
    description: Nothing is changed, so there is no diff.
  platform:
    support: full
    platforms: posix
    description: Linux hosts with the Ascend NPU driver (or an C(/etc/hccn.conf) for the fallback).
  idempotent:
    support: full
    description: Read-only; never reports a change.
notes:
  - The facts can feed rank-table generation; prefer O(hccn_tool) answers over C(hccn.conf), which
    is known to go stale.
seealso:
  - name: Huawei hccn_tool reference
    description: Commands and exit codes of the driver's network tool.
    link: https://support.huawei.com/enterprise/zh/doc/EDOC1100221413
"""

EXAMPLES = r"""
- name: Gather the NPU network facts
  ascend.cluster.hccn_facts:

- name: Fail early when a device has no IP or a DOWN link
  ansible.builtin.assert:
    that:
      - item.device_ip | length > 0
      - item.link == "UP"
    fail_msg: "device {{ item.device_id }} on {{ inventory_hostname }}: ip={{ item.device_ip }} link={{ item.link }}"
  loop: "{{ ansible_facts.ascend_npu.devices }}"
  loop_control:
    label: "{{ item.device_id }}"

- name: Query two devices only, with their TLS switch, using a driver outside PATH
  ascend.cluster.hccn_facts:
    devices: [0, 1]
    gather: [tls]
    hccn_tool: /opt/ascend/driver/tools/hccn_tool

- name: Warn about a stale /etc/hccn.conf
  ansible.builtin.debug:
    msg: "/etc/hccn.conf disagrees with device {{ item.device_id }} on {{ item.stale_keys | join(', ') }}"
  loop: "{{ ansible_facts.ascend_npu.devices | selectattr('stale_conf') }}"
"""

RETURN = r"""
ansible_facts:
  description: Facts to add to ansible_facts.
  returned: always
  type: complex
  contains:
    ascend_npu:
      description: The NPUs of this host and what their NICs report.
      returned: always
      type: complex
      contains:
        chip:
          description:
            - Chip model (V(910A), V(910B) or V(A3)) from the C(npu-smi info) Name column; null when unknown.
            - V(910A) is the first-generation Ascend 910 - npu-smi's C(910A), C(910ProB) and its bare C(910B), whose board
              shows DDR in use; V(910B) is Atlas A2 - C(910B1) to C(910B4) and suffixed names such as C(910B2C);
              V(A3) is C(Ascend910) in a table with a C(Chip Phy-ID) column (docs/real-outputs.md).
          type: str
          returned: always
          sample: 910B
        chip_name:
          description: The raw C(npu-smi info) Name column; null without C(npu-smi).
          type: str
          returned: always
          sample: 910B3
        chip_problem:
          description:
            - Why RV(ansible_facts.ascend_npu.chip) is null although npu-smi printed a table - a name that does not say which chip for
              sure - naming the field and the line; also among the warnings. The rank table role and the net_health
              report refuse such a server.
          type: str
          returned: always
          sample: >-
            npu-smi info's Name column 'Ascend910' (line '| 0     Ascend910 | OK | ...') is the generic name A3 boards
            print, but the table has no Chip Phy-ID column: A3 or not is unclear
        driver_version:
          description: The driver's version, from the header of C(npu-smi info) (C(Version:)); null without it.
          type: str
          returned: always
          sample: 24.1.0
        firmware_version:
          description:
            - The C(Firmware Version) that C(npu-smi info -t board -i <NPU id>) prints, the same on every NPU; C(<version>
              (NPU <ids>) / ...) when they differ; null when any is unknown (no npu-smi, a failing query, or C(NA), which
              some boards print to a non-root user).
          type: str
          returned: always
          sample: 7.1.0.4.218
        cann_toolkit_version:
          description:
            - The C(version) in the CANN toolkit's C(ascend_toolkit_install.info) (C(<cann_dir>/ascend-toolkit/latest/<arch>-linux/),
              or from CANN 8.5 C(<cann_dir>/cann/<arch>-linux/)); null when no such file gives one.
          type: str
          returned: always
          sample: 8.3.RC2
        cann_kernels_version:
          description:
            - The CANN kernels' version - C(version_dir) of C(<cann_dir>/ascend-toolkit/latest/opp_kernel/version.info), or
              from CANN 8.5 the C(version) of C(<cann_dir>/cann/<arch>-linux/ascend_ops_install.info); V(not installed)
              without such a file; null when the file gives none.
          type: str
          returned: always
          sample: 8.3.RC2
        device_count:
          description: Number of entries in RV(ansible_facts.ascend_npu.devices).
          type: int
          returned: always
          sample: 8
        source:
          description: Where the device values come from, V(hccn_tool) (the devices) or V(hccn_conf) (the file).
          type: str
          returned: always
          sample: hccn_tool
        device_list_source:
          description: How the device ids were found, V(devices option), V(npu-smi), V(/dev/davinci) or V(hccn.conf).
          type: str
          returned: always
          sample: npu-smi
        hccn_tool:
          description: Path of the C(hccn_tool) used; null when none was found.
          type: str
          returned: always
          sample: /usr/local/Ascend/driver/tools/hccn_tool
        hccn_conf:
          description: Path of the hccn.conf file read.
          type: str
          returned: always
          sample: /etc/hccn.conf
        npu_smi:
          description: Path of the C(npu-smi) used; null when none was found.
          type: str
          returned: always
          sample: /usr/local/sbin/npu-smi
        warnings:
          description: What the operator should know (fallbacks taken, cross-check skipped, devices that did not answer); also sent as task warnings.
          type: list
          elements: str
          returned: always
          sample: []
        devices:
          description: One entry per device, sorted by the order of the device list.
          type: list
          elements: dict
          returned: always
          contains:
            device_id:
              description: Physical device id (the C(hccn_tool -i) number).
              type: int
              sample: 0
            device_ip:
              description: Primary device IP; empty when none is set; null when the device could not be read.
              type: str
              sample: 192.168.100.101
            netmask:
              description: Netmask of the primary device IP; empty when unset; null when unknown.
              type: str
              sample: 255.255.255.0
            ips:
              description: Every address/netmask pair the device reports (the first is the primary one).
              type: list
              elements: dict
              sample: [{"address": "192.168.100.101", "netmask": "255.255.255.0"}]
            gateway:
              description: Default gateway; empty when none is set; null when unknown.
              type: str
              sample: 192.168.100.1
            netdetect:
              description: Netdetect target address; empty when unset; null when unknown.
              type: str
              sample: 192.168.100.1
            net_health:
              description: Raw C(net health status) value (V(Success), V(Init), V(Receive timeout), ...); null when unknown.
              type: str
              sample: Success
            link:
              description: V(UP) or V(DOWN); null when unknown.
              type: str
              sample: UP
            error:
              description: Raw stderr of the first query this device failed (for example V(Command execute failed!)); null when it answered.
              type: str
              sample: null
            unparsed:
              description:
                - The answers this collection could not read, by query (V(ip), V(gateway), V(netdetect), V(net_health),
                  V(link), V(tls), V(mac)), as printed (lines joined by C( / ), at most 300 characters). Each such
                  query's fields are null (unknown) in this entry.
                - Empty when every answer was read.
              type: dict
              returned: always
              sample: {"link": "link status: ???"}
            conf:
              description: What hccn.conf says for this device (key without the C(_N) suffix, value).
              type: dict
              sample: {"address": "192.168.100.101", "netmask": "255.255.255.0"}
            stale_conf:
              description: True when hccn.conf disagrees with what the device reports.
              type: bool
              sample: false
            stale_keys:
              description: The hccn.conf keys (V(address), V(netmask), V(gateway), V(netdetect)) that disagree with the device.
              type: list
              elements: str
              sample: []
            tls_switch:
              description: TLS switch of the device; null when its C(-tls -g) answer could not be read (see C(unparsed)).
              type: bool
              returned: when O(gather) contains V(tls) and the device answered
              sample: false
            tls_preconfigured:
              description:
                - Whether a TLS configuration is preset on the device.
                - Null when the driver prints no C(tls preconfigured[...]) field (some drivers print only the switch and
                  the alarm threshold). Nothing in the collection decides on it.
              type: bool
              returned: when O(gather) contains V(tls) and the device answered
              sample: true
            tls_alarm_days:
              description: TLS certificate alarm threshold, in days; null when the driver prints none.
              type: int
              returned: when O(gather) contains V(tls) and the device answered
              sample: 60
            mac:
              description: MAC address of the device NIC.
              type: str
              returned: when O(gather) contains V(mac)
              sample: "78:b4:6a:12:34:56"
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.ascend.cluster.plugins.module_utils import _options as options
from ansible_collections.ascend.cluster.plugins.module_utils._hccn.facts import EXTRA_QUERIES, FactsError, Gatherer


def main():
    module = AnsibleModule(
        argument_spec=options.spec(
            options.TOOL_PATHS,
            options.HCCN_CALLS,
            devices=dict(type="list", elements="int"),
            gather=dict(type="list", elements="str", choices=list(EXTRA_QUERIES), default=[]),
            parallel=dict(type="int", default=128),
            dev_dir=dict(type="path", default="/dev"),
            cann_dir=dict(type="path"),
        ),
        supports_check_mode=True,
    )
    try:
        facts = Gatherer(module).gather()
    except FactsError as exc:
        module.fail_json(msg=exc.msg, **exc.details)
    for warning in facts["warnings"]:
        module.warn(warning)
    module.exit_json(changed=False, ansible_facts={"ascend_npu": facts})


if __name__ == "__main__":
    main()
