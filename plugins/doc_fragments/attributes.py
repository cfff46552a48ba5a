# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Attributes shared by modules: ``READ_ONLY`` (``ascend.cluster.attributes.read_only``), a module that changes nothing;
``RUNS_COMMAND`` (``ascend.cluster.attributes.runs_command``), one that starts the training command on every call.

Each module still states its own ``check_mode`` (what it does in check mode differs) and, where it has one, ``action``.
"""

from __future__ import annotations


class ModuleDocFragment:
    DOCUMENTATION = r"""
options: {}
"""

    READ_ONLY = r"""
options: {}
attributes:
  diff_mode:
    support: none
    description: No diff.
  idempotent:
    support: full
    description: Changes nothing.
"""

    RUNS_COMMAND = r"""
options: {}
attributes:
  check_mode:
    support: none
    description: Starts the training command, which cannot be simulated.
  diff_mode:
    support: none
    description: No diff.
  idempotent:
    support: none
    description: Every call runs the command.
"""
