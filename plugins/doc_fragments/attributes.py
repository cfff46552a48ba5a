# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Attributes shared by modules: ``READ_ONLY`` (``ascend.cluster.attributes.read_only``), a module that changes nothing.

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
