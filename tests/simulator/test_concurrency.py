"""80 concurrent hccn_tool queries (what hccn_facts does on a 16-device host) all answer correctly.

How fast they are is measured by bench/bench_simulator.py, not asserted here.
"""

from __future__ import annotations

import pytest

from tests.simulator.simhelpers import a3_server, facts_queries_at_once, sim

PREFIX = {
    "-ip": "ipaddr:",
    "-gateway": "default gateway:",
    "-netdetect": "netdetect addr: ",
    "-net_health": "net health status: ",
    "-link": "link status: ",
}


@pytest.fixture
def server(tmp_path):
    return a3_server(tmp_path)


def test_80_concurrent_queries_with_latency_all_answer(server):
    sim("-q", "fault", "--state", server["state_dir"], "latency", "--seconds", "0.1")
    results = facts_queries_at_once(server)
    assert len(results) == 80
    for (dev, query), proc in results:
        assert proc.returncode == 0 and proc.stderr == "", (dev, query, proc)
        assert proc.stdout.startswith(PREFIX[query]) and proc.stdout.endswith("\n"), (dev, query, proc.stdout)
