# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The parameter plane's checks on the controller: IP plans, net_health, the ping mesh, the smoke check."""
