# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The per-call timeout of the modules that run hccn_tool (hccn_facts, hccn_config)."""

from __future__ import annotations


class ModuleDocFragment:
    DOCUMENTATION = r"""
options:
  timeout:
    description:
      - Seconds one C(hccn_tool) (or C(npu-smi)) call may take before it is stopped, with everything it started.
    type: int
    default: 30
"""
