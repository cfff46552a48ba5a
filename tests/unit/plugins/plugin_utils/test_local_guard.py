"""The firewall role's refusal of the controller's own firewall: local_refusal(host, connection, address, mode, refuse)."""

from __future__ import annotations

import pytest

from ansible_collections.ascend.cluster.plugins.plugin_utils._net.firewall_guard import local_refusal

REFUSED = "h1 is reached with the local connection: the firewall role would change this machine's own firewall."


@pytest.mark.parametrize(
    ("connection", "address", "mode", "refuse", "refused"),
    [
        ("local", "h1", "disable", True, True),
        ("local", "10.0.0.1", "open_ports", True, True),  # the local connection, whatever the address says
        ("ssh", "localhost", "disable", True, True),
        ("ssh", "127.0.0.1", "open_ports", True, True),
        ("ssh", "::1", "disable", True, True),
        ("ssh", None, "disable", True, False),  # no address: the inventory name h1, not the loopback
        ("ssh", "10.0.0.1", "disable", True, False),
        ("paramiko", "10.0.0.1", "open_ports", True, False),
        ("local", "h1", "none", True, False),  # mode none changes nothing
        ("local", "localhost", "disable", False, False),  # allowed (ascend_firewall_allow_local=true)
        ("ansible.builtin.local", "10.0.0.1", "disable", True, False),  # a name, not a transport: not what the action passes
        ("", "", "disable", True, False),  # nothing known: the inventory name h1 decides
    ],
)
def test_only_the_controllers_own_firewall_is_refused(connection, address, mode, refuse, refused):
    message = local_refusal("h1", connection, address, mode, refuse=refuse)
    assert (message is not None) is refused
    if message is not None:
        assert message.startswith(REFUSED)
        assert "ascend_firewall_mode=none" in message and "ascend_firewall_allow_local=true" in message


def test_the_inventory_name_counts_when_there_is_no_address():
    assert local_refusal("localhost", "ssh", None, "disable", refuse=True) is not None
    assert local_refusal("localhost", "ssh", "10.0.0.1", "disable", refuse=True) is None
