"""80 concurrent hccn_tool queries (what hccn_facts does on a 16-device host) all answer correctly.

How fast they are is measured by bench/bench_simulator.py, not asserted here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.simulator.simhelpers import sim

PYTHON = "/usr/bin/python3" if os.access("/usr/bin/python3", os.X_OK) else sys.executable
QUERIES = ("-ip", "-gateway", "-netdetect", "-net_health", "-link")
PREFIX = {
    "-ip": "ipaddr:",
    "-gateway": "default gateway:",
    "-netdetect": "netdetect addr: ",
    "-net_health": "net health status: ",
    "-link": "link status: ",
}


@pytest.fixture
def a3_server(tmp_path):
    out = sim(
        "cluster",
        "--root",
        tmp_path / "cl",
        "--servers",
        "1",
        "--chip",
        "A3",
        "--devices",
        "16",
        "--preset-ips",
        "--settle",
        "0",
        "--python",
        PYTHON,
    )
    return json.loads(out)["servers"][0]


def test_80_concurrent_queries_with_latency_all_answer(a3_server):
    sim("-q", "fault", "--state", a3_server["state_dir"], "latency", "--seconds", "0.1")
    tool = os.path.join(a3_server["bin_dir"], "hccn_tool")

    def call(task):
        dev, query = task
        return subprocess.run([tool, "-i", str(dev), query, "-g"], capture_output=True, text=True, check=False)

    tasks = [(dev, query) for dev in range(16) for query in QUERIES]
    with ThreadPoolExecutor(len(tasks)) as pool:
        results = list(pool.map(call, tasks))
    for (dev, query), proc in zip(tasks, results):
        assert proc.returncode == 0 and proc.stderr == "", (dev, query, proc)
        assert proc.stdout.startswith(PREFIX[query]) and proc.stdout.endswith("\n"), (dev, query, proc.stdout)
