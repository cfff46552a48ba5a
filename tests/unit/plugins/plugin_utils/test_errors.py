"""plugin_utils._errors.filter_errors: a filter raises with its name, or returns the message when asked."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.ascend.cluster.plugins.filter.rank_table import npu_env, rank_table, select_devices

SERVERS = [{"server_id": f"10.0.0.{s}", "devices": [{"device_id": d, "device_ip": f"192.168.{s}.{d}"} for d in range(8)]} for s in (1, 2)]
IMPOSSIBLE = "np=13 is not possible with the available 910B devices"


def test_strict_raises_with_the_filters_name():
    with pytest.raises(AnsibleFilterError, match=f"^select_devices: {IMPOSSIBLE}"):
        select_devices(SERVERS, 13, chip="910B")


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: select_devices(SERVERS, 13, chip="910B", errors="return"), IMPOSSIBLE),
        (lambda: npu_env("10.0.0.9:4", available=SERVERS, errors="return"), "--env entry '10.0.0.9:4': server 10.0.0.9 is not among"),
        (lambda: rank_table([{"server_id": "10.0.0.1", "devices": [{"device_id": 99}]}], errors="return"), ""),
    ],
    ids=["select_devices", "npu_env", "rank_table"],
)
def test_return_gives_the_message_alone(call, message):
    result = call()
    assert isinstance(result, str) and result.startswith(message), result
    assert not result.startswith(("select_devices", "npu_env", "rank_table"))


def test_return_gives_the_value_when_there_is_no_problem():
    assert [len(s["devices"]) for s in select_devices(SERVERS, 8, chip="910B", spread=True, errors="return")] == [4, 4]


def test_an_unknown_errors_mode_is_named():
    with pytest.raises(AnsibleFilterError, match="select_devices: errors must be 'strict' or 'return', not 'ignore'"):
        select_devices(SERVERS, 8, errors="ignore")
