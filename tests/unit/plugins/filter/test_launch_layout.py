"""Filter ascend.cluster.launch_layout (plugin_utils/_rank/layout.launch_layout): the servers' parts in a launch, from each
host's slice - what the launch role's templates used to number in Jinja."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.ascend.cluster.plugins.filter.launch import FilterModule, launch_layout
from ansible_collections.ascend.cluster.plugins.filter.rank_table import rank_layout, rank_table


def ranks(*ids: int) -> list:
    return [{"rank_id": r, "device_id": r % 8} for r in ids]


def test_filter_is_registered_under_its_name():
    assert FilterModule().filters()["launch_layout"] is launch_layout


def test_rank_0s_host_coordinates_every_host_with_ranks_stages_and_node_ranks_follow_the_lowest_rank():
    # play order h1, h2, h3, h4: h3 holds rank 0, h1 ranks 8-9, h4 ranks 4-7, h2 none
    layout = launch_layout(["h1", "h2", "h3", "h4"], [ranks(8, 9), [], ranks(0, 1, 2, 3), ranks(4, 5, 6, 7)], per_node=True)
    assert layout["coordinator"] == "h3" and layout["aoe_host"] == ""
    assert layout["group_hosts"] == ["h1", "h3", "h4"] and layout["staging_hosts"] == ["h1", "h3", "h4"]  # the play's order
    assert layout["node_rank"] == {"h3": 0, "h4": 1, "h1": 2} and layout["nnodes"] == 3


def test_per_device_has_no_node_ranks_and_one_node():
    layout = launch_layout(["h1", "h2"], [ranks(0, 1), ranks(2, 3)])
    assert layout["node_rank"] == {} and layout["nnodes"] == 1 and layout["coordinator"] == "h1"


def test_an_aoe_run_is_rank_0s_host_alone_and_waits_for_no_stager():
    layout = launch_layout(["h1", "h2"], [ranks(8, 9), ranks(0, 1)], aoe=True)
    assert layout["aoe_host"] == "h2" and layout["coordinator"] == "h2"
    assert layout["group_hosts"] == ["h2"] and layout["staging_hosts"] == []


def test_the_rank_tables_own_layout_feeds_it():
    servers = [
        {"host": "b", "server_id": "10.0.0.2", "devices": [{"device_id": d, "device_ip": f"198.19.1.{d + 1}"} for d in range(2)]},
        {"host": "a", "server_id": "10.0.0.1", "devices": [{"device_id": d, "device_ip": f"198.19.0.{d + 1}"} for d in range(2)]},
    ]
    slices = rank_layout(rank_table(servers), servers)["hosts"]
    layout = launch_layout(["b", "a"], [slices["b"], slices["a"]], per_node=True)
    assert layout["coordinator"] == "a" and layout["node_rank"] == {"a": 0, "b": 1}


@pytest.mark.parametrize(
    "hosts, slices, message",
    [
        (["h1"], [], "one list of ranks for each"),
        ("h1", [ranks(0)], "one list of ranks for each"),
        (["h1", "h2"], [ranks(1), ranks(2)], "no host holds rank 0"),
    ],
)
def test_bad_input_is_refused_naming_it(hosts, slices, message):
    with pytest.raises(AnsibleFilterError, match=message):
        launch_layout(hosts, slices)
