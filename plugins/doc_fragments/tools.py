# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Options every module of the ``ascend.cluster.ascend`` action group accepts: the driver tools' paths.

The argument spec that goes with them is ``module_utils/_options.py`` ``TOOL_PATHS``.
"""

from __future__ import annotations


class ModuleDocFragment:
    DOCUMENTATION = r"""
options:
  hccn_tool:
    description:
      - Path (or command name) of the driver's network tool C(hccn_tool).
      - When unset, C(hccn_tool) is searched on E(PATH), then at C(/usr/local/Ascend/driver/tools/hccn_tool).
      - M(ascend.cluster.hccn_config) fails when it finds none; M(ascend.cluster.hccn_facts) then reads
        O(hccn_conf) instead, with a warning. Both fail when the option is set to something not executable.
      - The other modules of the action group accept it and do not use it.
    type: str
  npu_smi:
    description:
      - Path (or command name) of C(npu-smi).
      - When unset, C(npu-smi) is searched on E(PATH), then in C(/usr/local/sbin), C(/usr/local/bin) and
        C(/usr/local/Ascend/driver/tools).
      - M(ascend.cluster.hccn_facts) lists the devices and reads the chip model with it (without one, devices
        come from C(/dev/davinciN) and the chip is unknown; set to something not executable, the task fails).
        M(ascend.cluster.training_job) reads the NPU process list with it (V(preflight); without one, only job
        records and locks are checked, with a warning).
      - The other modules of the action group accept it and do not use it.
    type: str
  hccn_conf:
    description:
      - Path of the driver's network configuration file.
      - M(ascend.cluster.hccn_facts) cross-checks it against the devices, or reads it instead of them when
        C(hccn_tool) is missing. M(ascend.cluster.hccn_config) compares it with the devices it configures and
        has C(hccn_tool) rewrite its stale lines. The other modules of the action group accept it and do not use it.
    type: path
    default: /etc/hccn.conf
notes:
  - The options O(hccn_tool), O(npu_smi) and O(hccn_conf) are shared by every module of the action group
    C(ascend.cluster.ascend), so a play sets them once, with C(module_defaults) for
    C(group/ascend.cluster.ascend).
"""
