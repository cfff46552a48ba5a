"""Role ascend.cluster.firewall against the simulated LOCAL cluster: it must never touch this
machine's firewall. Mode none reports and runs nothing; any other mode is refused over the local
connection before a single command runs. The real firewall paths are tested in the test bed
(tests/testbed/test_firewall.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.ansible_cli import run_playbook
from tests.helpers.plays import firewall_play

from .conftest import SIM_INVENTORY


def tasks_that_ran(stdout: str) -> list[str]:
    """Titles of the tasks whose output is not only 'skipping' (included files are not tasks)."""
    ran = []
    for block in stdout.split("TASK [")[1:]:
        title, _newline, body = block.partition("\n")
        lines = [line for line in body.splitlines() if line.strip() and not line.startswith("PLAY")]
        if lines and not all(line.startswith("skipping:") for line in lines):
            ran.append(title.split("]")[0])
    return ran


@pytest.fixture
def play(tmp_path: Path) -> Path:
    return firewall_play(tmp_path)


def test_mode_none_reports_and_runs_nothing(sim_cluster, play):
    cluster = sim_cluster(servers=1)
    result = run_playbook(play, SIM_INVENTORY, extra_vars={**cluster.inventory_vars, "ascend_firewall_mode": "none"}, limit="server0")
    assert result.rc == 0, result
    assert result.changed() == 0, result
    assert "server0  none  not checked (mode none)  nothing to do" in result.stdout
    ran = tasks_that_ran(result.stdout)
    assert not [t for t in ran if "Read" in t or "Run the planned" in t or "Work out" in t], ran


@pytest.mark.parametrize("mode", ["disable", "open_ports"])
def test_a_local_connection_is_refused_before_anything_runs(sim_cluster, play, mode):
    cluster = sim_cluster(servers=1)
    result = run_playbook(play, SIM_INVENTORY, extra_vars={**cluster.inventory_vars, "ascend_firewall_mode": mode}, limit="server0")
    assert result.rc != 0, result
    assert "is reached with the local connection: the firewall role would change" in result.stdout
    assert "TASK [ascend.cluster.firewall : Read" not in result.stdout
    assert result.recap["server0"]["changed"] == 0


def test_bad_arguments_fail_before_any_task(sim_cluster, play):
    cluster = sim_cluster(servers=1)
    result = run_playbook(play, SIM_INVENTORY, extra_vars={**cluster.inventory_vars, "ascend_firewall_mode": "off"}, limit="server0")
    assert result.rc != 0, result
    assert "ascend_firewall_mode" in result.stdout and "disable, open_ports, none" in result.stdout
