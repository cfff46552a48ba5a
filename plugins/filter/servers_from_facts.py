# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter ``servers_from_facts``: hosts' ``ascend_npu`` facts -> the rank-table ``servers`` list."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError


def servers_from_facts(hosts, facts_key="ascend_npu"):
    # imported when called, not when Ansible loads the file (docs/contracts.md, filter files)
    from ansible_collections.ascend.cluster.plugins.plugin_utils._servers import ServersError, servers_from_hostvars

    try:
        return servers_from_hostvars(hosts, facts_key)
    except ServersError as exc:
        raise AnsibleFilterError(str(exc)) from exc


class FilterModule:
    def filters(self):
        return {"servers_from_facts": servers_from_facts}
