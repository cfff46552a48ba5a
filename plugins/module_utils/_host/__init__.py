# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The host around the NPUs: firewall, packet filter, listening ports, HCCL's host NIC, small text files."""
