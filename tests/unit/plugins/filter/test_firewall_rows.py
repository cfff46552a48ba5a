"""Filter ascend.cluster.firewall_rows: the firewall role's table rows from each host's result."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.ascend.cluster.plugins.filter.firewall import firewall_rows

SETTLED = {"changed": False, "mode": "open_ports", "backend": "ufw", "found": "ufw active", "action": "nothing to do"}


def test_one_row_per_host_in_order_and_mode_none_hosts_read_not_checked():
    hosts = [
        {"inventory_hostname": "h2", "_ascend_firewall_result": SETTLED},
        {
            "inventory_hostname": "h1",
            "_ascend_firewall_result": {"changed": False, "skipped": True, "skip_reason": "Conditional result was False"},
        },
        {"inventory_hostname": "h3"},  # never registered (the role did not run there)
    ]
    assert firewall_rows(hosts) == [
        {"host": "h2", "mode": "open_ports", "found": "ufw active", "action": "nothing to do"},
        {"host": "h1", "mode": "none", "found": "not checked (mode none)", "action": "nothing to do"},
        {"host": "h3", "mode": "none", "found": "not checked (mode none)", "action": "nothing to do"},
    ]


def test_the_result_variable_can_be_named():
    assert firewall_rows([{"inventory_hostname": "h1", "fw": dict(SETTLED, action="ran: ufw --force enable")}], "fw")[0]["action"] == (
        "ran: ufw --force enable"
    )


@pytest.mark.parametrize("hosts", [["h1"], [{"_ascend_firewall_result": SETTLED}]], ids=["a name, not variables", "no inventory_hostname"])
def test_anything_but_hosts_variables_is_refused(hosts):
    with pytest.raises(AnsibleFilterError, match="firewall_rows: entry 0 is not a host's variables"):
        firewall_rows(hosts)
