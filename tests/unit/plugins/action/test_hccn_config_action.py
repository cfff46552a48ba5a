"""The hccn_config action: skipped on the controller when this run's facts show the devices set; else one module call."""

from __future__ import annotations

import pytest

from ansible_collections.ascend.cluster.plugins.action import hccn_config as action
from tests.unit.plugins.action.fakes import action_for

DEVICES = [{"device_id": 0, "address": "198.19.0.11", "netmask": "255.255.255.0", "gateway": "198.19.0.1"}]
SET = {"device_id": 0, "device_ip": "198.19.0.11", "netmask": "255.255.255.0", "gateway": "198.19.0.1", "stale_conf": False}
FACTS = {"hccn_conf": "/etc/hccn.conf", "devices": [SET]}
CONFIGURED = {"changed": True, "devices": [{"device_id": 0, "changed": ["address"]}]}


def run(args: dict) -> tuple[dict, list]:
    """The action's result for ``args`` and the module calls it made (the module answers CONFIGURED)."""
    plugin, calls = action_for(action, args, answer=CONFIGURED)
    return plugin.run(task_vars={}), calls


@pytest.mark.parametrize(
    ("args", "skipped"),
    [
        ({"devices": DEVICES, "facts": FACTS}, True),
        ({"devices": DEVICES, "facts": FACTS, "hccn_conf": "/etc/hccn.conf"}, True),
        ({"devices": DEVICES, "facts": FACTS, "hccn_conf": ""}, True),  # empty: the module's default file
        ({"devices": DEVICES, "facts": FACTS, "hccn_conf": "/opt/hccn.conf"}, False),  # facts read from another file
        ({"devices": DEVICES, "facts": {"hccn_conf": "/etc/hccn.conf", "devices": [dict(SET, device_ip="198.19.0.99")]}}, False),
        ({"devices": DEVICES, "facts": {"hccn_conf": "/etc/hccn.conf", "devices": [dict(SET, stale_conf=True)]}}, False),
        ({"devices": DEVICES, "facts": {}}, False),  # no facts: the module decides
        ({"devices": DEVICES}, False),
        ({"devices": [], "facts": FACTS}, False),
        ({"devices": "not a list", "facts": FACTS}, False),  # bad input: left to the module's own check
        ({"devices": DEVICES, "facts": "not a dict"}, False),
    ],
    ids=[
        "settled",
        "settled, file named",
        "settled, file empty",
        "another file",
        "another address",
        "stale line",
        "empty facts",
        "no facts",
        "no devices",
        "devices not a list",
        "facts not a dict",
    ],
)
def test_skipped_only_when_the_facts_show_every_device_set(args, skipped):
    result, calls = run(dict(args))
    if skipped:
        assert result == {"changed": False, "skipped": True, "skip_reason": action.SETTLED} and calls == []
    else:
        assert result == CONFIGURED
        assert calls == [{"module_name": "ascend.cluster.hccn_config", "module_args": {k: v for k, v in args.items() if k != "facts"}}]
