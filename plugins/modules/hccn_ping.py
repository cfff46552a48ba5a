#!/usr/bin/python
# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Module hccn_ping: ping other devices' IPs from this host's NPUs over the parameter plane."""

from __future__ import annotations

DOCUMENTATION = r"""
module: hccn_ping
short_description: Ping device IPs from the NPUs of a host over the parameter plane (C(hccn_tool -ping))
version_added: 0.2.0
description:
  - Runs C(hccn_tool -i N -ping -g address X) for every listed (device, address) pair, concurrently, and
    returns each pair's packet counts and round trips. The packets leave through the NPU's own NIC, so this
    checks the parameter plane between servers (cables, switch ports, VLANs, addresses) that HCCL will use.
  - A pair that loses packets is a result (RV(results[].ok=false)), not a task failure; the task fails only
    when C(hccn_tool) is missing or a call gives no ping summary at all (a bad device id, an old driver).
  - The role C(ascend.cluster.net_health) plans the pairs (a sampled ring or the full mesh, see
    C(ascend_net_health_ping_mesh)) and names every pair that lost packets in its report.
author:
  - ascend.cluster contributors (!UNKNOWN)
extends_documentation_fragment:
  - ascend.cluster.attributes.read_only
  - ascend.cluster.tools
  - ascend.cluster.hccn_calls
options:
  targets:
    description: The pairs to ping.
    type: list
    elements: dict
    required: true
    suboptions:
      device_id:
        description: This host's NPU that sends (the C(hccn_tool -i) number).
        type: int
        required: true
      address:
        description: The IPv4 address to ping (another device's IP).
        type: str
        required: true
      peer:
        description: A label for the address in messages, for example C(server1 device 3).
        type: str
        default: ""
  parallel:
    description: How many C(hccn_tool) calls run at once.
    type: int
    default: 16
attributes:
  check_mode:
    support: full
    description: Only sends ICMP echo requests from the devices; nothing is configured.
"""

EXAMPLES = r"""
- name: Ping device 0 of the next server from device 0
  ascend.cluster.hccn_ping:
    targets:
      - {device_id: 0, address: 198.19.0.2, peer: server1 device 0}
  register: ping

- name: Name the pairs that lost packets
  ansible.builtin.debug:
    msg: "{{ ping.results | rejectattr('ok') | map(attribute='peer') | list }}"
"""

RETURN = r"""
results:
  description: One entry per target, in the order given.
  returned: success
  type: list
  elements: dict
  contains:
    device_id:
      description: The sending NPU.
      type: int
    address:
      description: The address pinged.
      type: str
    peer:
      description: The target's label.
      type: str
    ok:
      description: Every packet came back.
      type: bool
    sent:
      description: Packets sent.
      type: int
    received:
      description: Packets received.
      type: int
    loss_pct:
      description: Packet loss in percent, as C(hccn_tool) prints it.
      type: float
    avg_ms:
      description: Mean round trip of the packets received, in milliseconds; null when none came back.
      type: float
  sample:
    - {device_id: 0, address: 198.19.0.2, peer: server1 device 0, ok: true, sent: 3, received: 3, loss_pct: 0.0, avg_ms: 0.11}
lost:
  description: How many targets lost at least one packet.
  returned: success
  type: int
  sample: 0
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.ascend.cluster.plugins.module_utils import _options
from ansible_collections.ascend.cluster.plugins.module_utils._hccn import tool as _hccn_tool
from ansible_collections.ascend.cluster.plugins.module_utils._hccn.parse import ParseError


def ping_all(tool: _hccn_tool.HccnTool, targets: list, parallel: int) -> tuple[list, list]:
    """``(results, errors)``: one result per target; errors for the calls that gave no ping summary."""
    answers = _hccn_tool.pool_map(lambda t: tool.ping(t["device_id"], t["address"]), targets, parallel)
    results, errors = [], []
    for target, answer in zip(targets, answers):
        label = target.get("peer") or target["address"]
        if isinstance(answer, (_hccn_tool.HccnError, ParseError)):
            errors.append("device %s -> %s: %s" % (target["device_id"], label, answer))
            continue
        times = answer["times_ms"]
        results.append(
            dict(
                device_id=target["device_id"],
                address=target["address"],
                peer=target.get("peer") or "",
                ok=answer["sent"] > 0 and answer["received"] == answer["sent"],
                sent=answer["sent"],
                received=answer["received"],
                loss_pct=answer["loss_pct"],
                avg_ms=round(sum(times) / len(times), 3) if times else None,
            )
        )
    return results, errors


def main():
    module = AnsibleModule(
        argument_spec=_options.spec(
            _options.TOOL_PATHS,
            _options.HCCN_CALLS,
            targets=dict(
                type="list",
                elements="dict",
                required=True,
                options=dict(
                    device_id=dict(type="int", required=True), address=dict(type="str", required=True), peer=dict(type="str", default="")
                ),
            ),
            parallel=dict(type="int", default=16),
        ),
        supports_check_mode=True,
    )
    binary = _hccn_tool.find_binary(module, module.params["hccn_tool"])
    if binary is None:
        module.fail_json(msg=_hccn_tool.not_found_msg(module.params["hccn_tool"]), changed=False)
    tool = _hccn_tool.HccnTool(module, binary, timeout=module.params["timeout"])
    results, errors = ping_all(tool, module.params["targets"], module.params["parallel"])
    if errors:
        module.fail_json(
            msg="hccn_tool -ping gave no answer for %d target(s): %s; check the device ids and the driver (an old driver may not have -ping)"
            % (len(errors), "; ".join(errors)),
            results=results,
            changed=False,
        )
    module.exit_json(changed=False, results=results, lost=sum(1 for r in results if not r["ok"]))


if __name__ == "__main__":
    main()
