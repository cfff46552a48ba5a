from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.ascend.cluster.plugins.filter.rank_table import rank_entries, rank_table

SERVERS = [
    {"server_id": "10.0.0.2", "devices": [{"device_id": d, "device_ip": f"198.19.1.{d + 1}"} for d in (4, 5)]},
    {"server_id": "10.0.0.1", "devices": [{"device_id": d, "device_ip": f"198.19.0.{d + 1}"} for d in (0, 1)]},
]


@pytest.mark.parametrize("version", ["1.0", "template2"])
def test_entries_follow_rank_order_with_local_index(version):
    table = rank_table(SERVERS, version=version)
    entries = rank_entries(table)
    assert [(e["rank_id"], e["server_id"], e["device_id"], e["local_index"]) for e in entries] == [
        (0, "10.0.0.1", 0, 0),
        (1, "10.0.0.1", 1, 1),
        (2, "10.0.0.2", 4, 0),
        (3, "10.0.0.2", 5, 1),
    ]
    assert {e["local_count"] for e in entries} == {2}


def test_one_server_only():
    table = rank_table(SERVERS, order="given")
    mine = rank_entries(table, server_id="10.0.0.2")
    assert [(e["rank_id"], e["device_id"], e["device_ip"]) for e in mine] == [(0, 4, "198.19.1.5"), (1, 5, "198.19.1.6")]
    assert rank_entries(table, server_id="10.9.9.9") == []


def test_not_a_table_fails_clearly():
    with pytest.raises(AnsibleFilterError, match="rank_entries"):
        rank_entries({"server_list": "nope"})
