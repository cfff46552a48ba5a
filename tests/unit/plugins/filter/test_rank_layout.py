"""Filter ascend.cluster.rank_layout: every host's slice from one parse of the table."""

from __future__ import annotations

from typing import Any

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.ascend.cluster.plugins.filter.rank_table import FilterModule, rank_entries, rank_layout, rank_table
from ansible_collections.ascend.cluster.plugins.plugin_utils._rank import layout as _rank_layout

SERVERS: list[dict[str, Any]] = [
    {"host": "node2", "server_id": "10.0.0.2", "devices": [{"device_id": d, "device_ip": f"198.19.1.{d + 1}"} for d in (4, 5, 6, 7)]},
    {"host": "node1", "server_id": "10.0.0.1", "devices": [{"device_id": d, "device_ip": f"198.19.0.{d + 1}"} for d in (0, 1, 2, 3)]},
]


def test_filter_is_registered_under_its_name():
    assert FilterModule().filters()["rank_layout"] is rank_layout


@pytest.mark.parametrize("version", ["1.0", "template2"])
def test_each_host_gets_exactly_what_rank_entries_gives_for_its_server(version):
    table = rank_table(SERVERS, version=version)
    layout = rank_layout(table, SERVERS)
    assert layout["rank_size"] == 8
    assert layout["rank0_server_id"] == "10.0.0.1"
    assert sorted(layout["hosts"]) == ["node1", "node2"]
    for server in SERVERS:
        assert layout["hosts"][server["host"]] == rank_entries(table, server_id=server["server_id"])
    node2 = layout["hosts"]["node2"]
    assert [(e["rank_id"], e["device_id"], e["local_index"], e["local_count"]) for e in node2] == [
        (4, 4, 0, 4),
        (5, 5, 1, 4),
        (6, 6, 2, 4),
        (7, 7, 3, 4),
    ]


def test_given_order_puts_rank_0_on_the_first_listed_server():
    layout = rank_layout(rank_table(SERVERS, order="given"), SERVERS)
    assert layout["rank0_server_id"] == "10.0.0.2"
    assert [e["rank_id"] for e in layout["hosts"]["node2"]] == [0, 1, 2, 3]


def test_a_server_without_ranks_gets_an_empty_slice():
    spare = {"host": "node3", "server_id": "10.0.0.3", "devices": []}
    layout = rank_layout(rank_table(SERVERS), SERVERS + [spare])
    assert layout["hosts"]["node3"] == []
    assert layout["rank_size"] == 8


def test_the_table_is_parsed_once_whatever_the_number_of_servers(monkeypatch):
    servers = [
        {
            "host": f"n{i:03d}",
            "server_id": f"10.0.{i // 250}.{i % 250 + 1}",
            "devices": [{"device_id": d, "device_ip": f"198.19.{d}.{i + 1}"} for d in range(8)],
        }
        for i in range(64)
    ]
    table = rank_table(servers, chip="910B")
    calls = []
    real = _rank_layout.parse

    def counting_parse(*args: Any) -> Any:
        calls.append(1)
        return real(*args)

    monkeypatch.setattr(_rank_layout, "parse", counting_parse)
    layout = rank_layout(table, servers)
    assert len(calls) == 1
    assert layout["rank_size"] == 512
    assert sum(len(v) for v in layout["hosts"].values()) == 512


@pytest.mark.parametrize(
    "servers, message",
    [
        ([SERVERS[0]], "ranks on servers no host stands for: 10.0.0.1"),
        ([SERVERS[0], dict(SERVERS[1], host="node2")], "host node2 is listed twice"),
        ([{"server_id": "10.0.0.1"}], "needs host and server_id"),
        ("node1", "servers must be a list"),
    ],
)
def test_refusals_name_the_problem(servers, message):
    with pytest.raises(AnsibleFilterError, match=f"rank_layout: .*{message}"):
        rank_layout(rank_table(SERVERS), servers)


def test_a_broken_table_is_refused():
    with pytest.raises(AnsibleFilterError, match="rank_layout"):
        rank_layout({"server_list": "nope"}, SERVERS)
