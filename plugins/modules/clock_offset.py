#!/usr/bin/python
# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Documentation of the clock_offset action (it runs on the controller; there is no target side)."""

from __future__ import annotations

DOCUMENTATION = r"""
module: clock_offset
short_description: Measure a server's wall-clock offset against the controller; warn or refuse when it is large
version_added: 0.1.0
description:
  - Runs on the controller. Reads the server's clock O(samples) times, each with one shell command
    (C(date +%s.%N), or the server's Python where C(date) has no C(%N)) over the connection the play already
    holds, and times each reading on the controller.
  - Keeps the reading with the smallest round trip and computes, as NTP does,
    C(offset = server_time - t_mid), where C(t_mid) is the controller's time halfway between sending and
    receiving; the true offset lies within RV(uncertainty) (half that round trip) of it. A positive offset
    is a clock ahead of the controller's.
  - Warns (naming the server and the fix, chrony or NTP) when the offset is above O(warn_above) seconds;
    above O(refuse_above) it returns RV(status=refuse) unless O(allow). The task itself never fails for the
    offset, so that a play can show every server's offset before it refuses; it fails when the clock cannot be read.
  - Used by the C(ascend.cluster.launch_training) role's pre-flight; the launch opens each server's gate at
    the common start time plus that server's offset, so ranks start together even when clocks disagree.
author:
  - ascend.cluster contributors (!UNKNOWN)
options:
  samples:
    description: How many readings to take (each one short shell command over the existing connection).
    type: int
    default: 5
  warn_above:
    description: Warn when the offset is larger than this many seconds (either way).
    type: float
    default: 1.0
  refuse_above:
    description: Return RV(status=refuse) when the offset is larger than this many seconds (either way).
    type: float
    default: 30.0
  allow:
    description: Only warn, never refuse, above O(refuse_above).
    type: bool
    default: false
  server:
    description: Name of the server in messages; default the inventory hostname.
    type: str
extends_documentation_fragment:
  - ascend.cluster.attributes.read_only
attributes:
  action:
    support: full
    description: Runs on the controller, reading the server's clock with shell commands.
  check_mode:
    support: full
    description: Only reads the clock.
"""

EXAMPLES = r"""
- name: Measure every server's clock offset; warn above 1 s, refuse above 30 s
  ascend.cluster.clock_offset:
    warn_above: 1
    refuse_above: 30
  register: clock

- name: Refuse when a clock is too far off
  ansible.builtin.fail:
    msg: "{{ clock.msg }}"
  when: clock.status == 'refuse'
"""

RETURN = r"""
offset:
  description: The server's clock minus the controller's, in seconds (negative, behind).
  returned: success
  type: float
  sample: -30.0021
uncertainty:
  description: Half the round trip of the reading kept; the true offset lies within this many seconds of RV(offset).
  returned: success
  type: float
  sample: 0.0041
rtt:
  description: Round trip of the reading kept, in seconds.
  returned: success
  type: float
  sample: 0.0082
samples:
  description: Number of readings taken.
  returned: success
  type: int
  sample: 5
status:
  description: V(ok), V(warn) (also when O(allow) lets a large offset through) or V(refuse).
  returned: success
  type: str
  sample: warn
msg:
  description: What is wrong and how to fix it; empty when RV(status=ok).
  returned: success
  type: str
server:
  description: The server, as named in messages.
  returned: success
  type: str
"""
