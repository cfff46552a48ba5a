# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A training job on one server: its files, ranks, supervisor, group, pre-flight and what it left (docs/contracts.md)."""
