"""missing_superpod_ids: the servers a version 1.2 (A3 SuperPoD) table cannot be built for, table-driven."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.ascend.cluster.plugins.filter.rank_table import missing_superpod_ids


def server(host, pod="7", super_ids=(1000, 1001)):
    devices = [{"device_id": i, "device_ip": f"10.0.0.{i + 1}"} for i in range(len(super_ids))]
    for device, super_id in zip(devices, super_ids):
        if super_id is not None:
            device["super_device_id"] = super_id
    entry = {"host": host, "server_id": f"127.0.1.{host[-1]}", "devices": devices}
    if pod is not None:
        entry["super_pod_id"] = pod
    return entry


@pytest.mark.parametrize(
    "servers, kwargs, missing",
    [
        ([server("s0"), server("s1")], {"chip": "A3"}, []),
        ([server("s0", pod=None), server("s1")], {"chip": "A3"}, ["s0"]),
        ([server("s0"), server("s1", super_ids=(1016, None))], {"chip": "A3"}, ["s1"]),
        ([server("s0", pod=None), server("s1", super_ids=(None, None))], {"chip": "A3"}, ["s0", "s1"]),
        ([server("s0", pod=None)], {"chip": "A3", "version": "1.2"}, ["s0"]),
        ([server("s0", pod=None)], {"chip": "910B"}, []),  # a 1.0 table needs no SuperPoD ids
        ([server("s0", pod=None)], {}, []),  # unknown chip: version 1.0
        ([dict(server("s0", pod=None), host=None)], {"chip": "A3"}, ["127.0.1.0"]),  # no host: the server id
    ],
)
def test_missing(servers, kwargs, missing):
    assert missing_superpod_ids(servers, **kwargs) == missing


@pytest.mark.parametrize(
    "servers, kwargs, message",
    [
        ("s0", {"chip": "A3"}, "the input must be the list of servers"),
        (["s0"], {"chip": "A3"}, "server entry 0 is not a mapping"),
        ([server("s0")], {"chip": "A3", "version": "1.0"}, "A3 reads rank table version 1.2, not 1.0"),
    ],
)
def test_bad_input_is_named(servers, kwargs, message):
    with pytest.raises(AnsibleFilterError, match=f"missing_superpod_ids: .*{message}"):
        missing_superpod_ids(servers, **kwargs)
