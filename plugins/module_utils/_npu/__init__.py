# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""npu-smi, the chips' profiles and the driver, firmware and CANN versions of a server."""
