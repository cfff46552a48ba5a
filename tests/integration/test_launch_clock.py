"""The pre-flight's clock offset on the simulated 2 x 8 cluster (both servers are this machine: ~0)."""

from __future__ import annotations

import re

from tests.helpers.ansible_cli import run_playbook

from .conftest import SIM_INVENTORY
from .test_launch_playbooks import TRAIN, launch_vars, rank_states

ROW = re.compile(r'^\s*"(server\d)\s+(-?\d+\.\d+)\s+(\d+\.\d+)\s+(\d+\.\d+)\s+(ok|warn|refuse)",?$', re.M)


def test_preflight_shows_each_servers_clock_offset_near_zero(sim_cluster):
    cluster = sim_cluster()
    res = run_playbook(TRAIN, SIM_INVENTORY, extra_vars=launch_vars(cluster, np=16, ascend_train_env={"STEPS": "1"}))
    assert res.rc == 0, res
    assert "SERVER   CLOCK_OFFSET_S  +/-_S" in res.stdout, res
    rows = {m.group(1): (float(m.group(2)), float(m.group(3)), float(m.group(4))) for m in ROW.finditer(res.stdout)}
    assert sorted(rows) == ["server0", "server1"], res.stdout
    for server, (offset, uncertainty, rtt) in rows.items():
        # one machine, one clock: the offset is within the measurement's own bound (plus rounding)
        assert abs(offset) <= uncertainty + 0.001, (server, rows)
        assert abs(uncertainty - rtt / 2) <= 0.0001, (server, rows)
    assert all(m.group(5) == "ok" for m in ROW.finditer(res.stdout)), res.stdout
    assert "the clock of" not in res.stdout + res.stderr  # no warning
    assert all(s["rc"] == 0 for s in rank_states(cluster).values())
