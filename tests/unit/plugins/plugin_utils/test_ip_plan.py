"""plugin_utils._ip_plan directly: what the filters do not show (missing netaddr, server names)."""

from __future__ import annotations

import pytest

from ansible_collections.ascend.cluster.plugins.plugin_utils import _ip_plan
from ansible_collections.ascend.cluster.plugins.plugin_utils._errors import ClusterSpecError


def test_missing_netaddr_gives_the_install_hint(monkeypatch):
    monkeypatch.setattr(_ip_plan, "netaddr", None)
    for call in (lambda: _ip_plan.build_plan(["s"], "amp", ["198.18.0.0/24"]), lambda: _ip_plan.validate_plan({})):
        with pytest.raises(ClusterSpecError, match="need the netaddr Python library on the controller: pip install netaddr"):
            call()


@pytest.mark.parametrize(
    "servers, names",
    [
        (["a", "b"], ["a", "b"]),
        ([{"host": "a", "devices": []}, {"name": "b"}, {"server_id": "10.0.0.3"}], ["a", "b", "10.0.0.3"]),
    ],
)
def test_server_names(servers, names):
    assert _ip_plan.server_names(servers) == names


@pytest.mark.parametrize(
    "servers, message",
    [
        ("a", "must be a list of server names"),
        ([{"devices": []}], "server 0: {'devices': []} is not a host name"),
        ([3], "server 0: 3 is not a host name"),
    ],
)
def test_bad_server_lists(servers, message):
    with pytest.raises(ClusterSpecError, match=message.replace("[", r"\[").replace("]", r"\]")):
        _ip_plan.server_names(servers)
