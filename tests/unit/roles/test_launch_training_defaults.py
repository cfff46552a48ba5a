"""The launch role's play-size-derived defaults: gate margin and gate time-out (docs/launch.md)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template

DEFAULTS = Path(__file__).resolve().parents[3] / "roles" / "launch_training" / "defaults" / "main.yml"


def rendered(name: str, hosts: int, forks: int) -> float:
    expression = yaml.safe_load(DEFAULTS.read_text())[name]
    variables = {"ansible_play_hosts": [f"server{i}" for i in range(hosts)], "ansible_forks": forks}
    return float(Templar(loader=DataLoader(), variables=variables).template(trust_as_template(expression)))


@pytest.mark.parametrize(
    "hosts, forks, timeout",
    [
        (2, 5, 600),  # small plays keep the 600 s floor
        (1000, 50, 600),  # 20 batches: 120 + 300 s, under the floor
        (1000, 10, 1620),  # 100 batches of a stage call and a gate before the gate opens
        (1000, 5, 3120),
        (41, 1, 735),  # one server per batch
    ],
)
def test_gate_timeout_grows_with_batches_of_forks(hosts, forks, timeout):
    assert rendered("ascend_launch_gate_timeout_s", hosts, forks) == timeout


def test_gate_margin_is_a_constant_the_group_sends_the_gate_to_every_server_at_once():
    # the coordinator sends the gate to every member once all have joined: no batches of forks to wait for
    assert yaml.safe_load(DEFAULTS.read_text())["ascend_launch_gate_margin_s"] == 0.5
