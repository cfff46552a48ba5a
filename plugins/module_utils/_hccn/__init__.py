# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""hccn_tool and the devices' network settings: parsers, the client, the facts, /etc/hccn.conf, the IP rules."""
