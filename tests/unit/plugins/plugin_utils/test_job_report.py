"""The per-rank rows of the launch report and status.yml (filter rank_rows), table-driven."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.ascend.cluster.plugins.filter.rank_rows import rank_rows


def rank(rank_id, device_id, **extra):
    return dict({"rank_id": rank_id, "device_id": device_id, "state": "done", "rc": 0}, **extra)


HOSTVARS = {
    "server0": {"_ascend_watch": {"server": "10.0.0.1", "job_id": "j1", "ranks": [rank(1, 1), rank(0, 0)]}},
    "server1": {"_ascend_watch": {"job_id": "j1", "ranks": [rank(2, 0, tail=["step 1", "x" * 70 + "the end"])]}},
    "server2": {},  # did not take part: no registered result
    "server3": {"_ascend_watch": {"skipped": True, "changed": False}},  # the task was skipped there
}


def test_every_servers_ranks_in_rank_order_named_by_the_watchs_address_else_the_host():
    rows = rank_rows(["server0", "server1", "server2", "server3"], HOSTVARS, "_ascend_watch")
    assert [(r["rank_id"], r["server"], r["job_id"]) for r in rows] == [(0, "10.0.0.1", "j1"), (1, "10.0.0.1", "j1"), (2, "server1", "j1")]
    assert rows[0]["last_line"] == ""
    assert rows[2]["last_line"] == ("x" * 70 + "the end")[-60:]
    assert rows[2]["tail"] == ["step 1", "x" * 70 + "the end"]  # the rank's own entry is kept


def test_no_host_with_a_result_gives_no_rows():
    assert rank_rows(["server2", "server3"], HOSTVARS, "_ascend_watch") == []
    assert rank_rows(["server0"], HOSTVARS, "_ascend_status") == []


@pytest.mark.parametrize(
    "hosts, message",
    [("server0", "the input must be the play's host names"), (["nowhere"], "host 'nowhere' is not in hostvars")],
)
def test_bad_input_is_named(hosts, message):
    with pytest.raises(AnsibleFilterError, match=f"rank_rows: {message}"):
        rank_rows(hosts, HOSTVARS, "_ascend_watch")
