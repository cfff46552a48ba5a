"""module_utils/_job/stage: a server's ranks as the runners take them - the rank layout's numbering, not a second count."""

from __future__ import annotations

from typing import Any

import pytest
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.ascend.cluster.plugins.filter.rank_table import rank_table
from ansible_collections.ascend.cluster.plugins.module_utils._job import stage
from ansible_collections.ascend.cluster.plugins.plugin_utils._rank import layout as _rank_layout

SERVERS: list[dict[str, Any]] = [
    {"host": "h1", "server_id": "10.0.0.1", "devices": [{"device_id": d, "device_ip": f"198.19.0.{d + 1}"} for d in (0, 1, 2, 3)]},
    {"host": "h2", "server_id": "10.0.0.2", "devices": [{"device_id": d, "device_ip": f"198.19.1.{d + 1}"} for d in (4, 5, 6, 7)]},
]


def validated(ranks: list, **more: Any) -> dict:
    """The module's options as Ansible validates them (training_ranks' spec), for ``ranks``."""
    args = dict(job_id="j", run_dir="/tmp/j", command="true", rank_size=8, rank_table_path="/tmp/j/rank_table.json", ranks=ranks, **more)
    result = ArgumentSpecValidator(stage.ARGS, mutually_exclusive=stage.MUTUALLY_EXCLUSIVE).validate(args)
    assert not result.error_messages, result.error_messages
    return result.validated_parameters


def test_a_hosts_slice_of_the_layout_is_taken_as_it_is_with_its_numbering():
    layout = _rank_layout.rank_layout(rank_table(SERVERS), SERVERS)
    p = validated(layout["hosts"]["h2"])  # device_ip, server_id, local_index, local_count: the layout's entry, accepted
    stage.check(p)
    assert p["local_count"] == 4
    assert [(r["rank_id"], r["device_id"], r["local_rank"], r["local_count"]) for r in p["ranks"]] == [
        (4, 4, 0, 4),
        (5, 5, 1, 4),
        (6, 6, 2, 4),
        (7, 7, 3, 4),
    ]


def test_an_aoe_run_starts_rank_0_alone_and_keeps_the_servers_count():
    """The launch starts only rank 0 for an AOE tuning run; DEVICE_NUM stays the server's ranks in the table."""
    rank0 = [e for e in _rank_layout.rank_layout(rank_table(SERVERS), SERVERS)["hosts"]["h1"] if e["rank_id"] == 0]
    assert stage.local_places(rank0, None) == ([{"rank_id": 0, "device_id": 0, "local_rank": 0, "local_count": 4}], 4)


def test_the_layouts_local_index_is_used_not_the_position():
    ranks = [
        {"rank_id": 9, "device_id": 1, "local_index": 1, "local_count": 2},
        {"rank_id": 8, "device_id": 0, "local_index": 0, "local_count": 2},
    ]
    assert [r["local_rank"] for r in stage.local_places(ranks, None)[0]] == [1, 0]


def test_a_list_written_by_hand_is_numbered_by_its_order_and_counted():
    ranks = [{"rank_id": 8, "device_id": 0}, {"rank_id": 9, "device_id": 1}]
    assert stage.local_places(ranks, None) == (
        [
            {"rank_id": 8, "device_id": 0, "local_rank": 0, "local_count": 2},
            {"rank_id": 9, "device_id": 1, "local_rank": 1, "local_count": 2},
        ],
        2,
    )
    assert stage.local_places(ranks, 8)[1] == 8  # the option says the server has more ranks (AOE)


@pytest.mark.parametrize(
    "ranks, local_count, message",
    [
        ([{"rank_id": 8, "device_id": 0, "local_index": 0}, {"rank_id": 9, "device_id": 1}], None, "for every rank or for none"),
        ([{"rank_id": 8, "device_id": 0, "local_count": 2}, {"rank_id": 9, "device_id": 1, "local_count": 3}], None, "disagrees (2, 3)"),
        ([{"rank_id": 8, "device_id": 0, "local_count": 2}], 4, "disagrees (2, 4)"),
        ([{"rank_id": 8, "device_id": 0}, {"rank_id": 9, "device_id": 1}], 1, "fewer than the 2 ranks"),
        ([{"rank_id": 8, "device_id": 0, "local_index": 1}, {"rank_id": 9, "device_id": 1, "local_index": 1}], None, "must be different"),
        ([{"rank_id": 8, "device_id": 0, "local_index": 2}], 2, "within 0..1"),
    ],
)
def test_numbering_that_does_not_add_up_is_refused(ranks, local_count, message):
    with pytest.raises(stage.StageFailed) as caught:
        stage.local_places(ranks, local_count)
    assert message in str(caught.value)


def test_a_launcher_refuses_a_numbering_other_than_its_own():
    ranks = [
        {"rank_id": 8, "device_id": 0, "local_index": 1, "local_count": 2},
        {"rank_id": 9, "device_id": 1, "local_index": 0, "local_count": 2},
    ]
    p = validated(ranks, launcher="torchrun", node_rank=1, nnodes=2)
    with pytest.raises(stage.StageFailed) as caught:
        stage.check(p)
    assert "torchrun numbers its workers by their order in ranks" in str(caught.value)


def test_a_launcher_option_the_launch_relies_on_is_refused_by_the_module_too():
    """A call of training_ranks of one's own gets the launch role's refusal (module_utils/_job/launcher_args)."""
    ranks = [{"rank_id": 0, "device_id": 0, "local_index": 0, "local_count": 1}]
    p = validated(ranks, launcher="msrun", launcher_args=["--worker_log_name=w_{ip}"])
    with pytest.raises(stage.StageFailed, match="msrun --worker_log_name is refused: each rank's output is copied"):
        stage.check(p)
    stage.check(validated(ranks, launcher="msrun", launcher_args=["--cluster_time_out=900"]))


@pytest.mark.parametrize("lost_after, refused", [(0.9, True), (1.0, False), (3.0, False)])
def test_a_loss_quicker_than_two_heartbeats_is_refused(lost_after, refused):
    group = dict(address="127.0.0.1", port=29600, host="h1", coordinator=True, hosts=["h1"], lost_after=lost_after)
    p = validated([{"rank_id": 0, "device_id": 0}], group=group, group_secret="s")
    if not refused:
        stage.check(p)
        return
    with pytest.raises(stage.StageFailed) as caught:
        stage.check(p)
    assert str(caught.value) == (
        "group: lost_after 0.9 s is under 1 s, two of the group's 0.5 s heartbeats: one heartbeat late on a busy server would "
        "stop a healthy job as lost; set ascend_launch_lost_after_s to 1 or more (default 3)"
    )
