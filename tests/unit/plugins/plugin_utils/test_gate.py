"""The gate margin: derived from the servers, forks, the controller's cores and the slowest measured round trip."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.ascend.cluster.plugins.filter.gate_margin import FilterModule, gate_margin
from ansible_collections.ascend.cluster.plugins.plugin_utils import _gate
from ansible_collections.ascend.cluster.plugins.plugin_utils._errors import ClusterSpecError


@pytest.mark.parametrize(
    "servers, forks, clocks, cores, margin",
    [
        (2, 5, [{"rtt": 0.01}, {"rtt": 0.004}], 2, 0.47),  # one batch: 0.2 + 0.25 + 2 x the slowest rtt
        (2, 2, None, 2, 0.55),  # nothing measured yet: 0.05 s assumed
        (6, 5, [{"server": "h1"}], 2, 0.9),  # a reading without rtt counts as unmeasured; two batches
        (1000, 50, [{"rtt": 0.005}], 16, 6.45),  # 20 batches (5.2 s), but 100 CPU-s of gate tasks on 16 cores
        (1000, 50, [{"rtt": 0.005}], 64, 5.4),  # enough cores: the batches count
        (1000, 5, [{"rtt": 0.005}], 16, 52.2),  # few forks: 200 batches
        ("16", "8", [{"rtt": "0.002"}], "2", 1.0),  # numbers as strings (extra vars); 1.6 CPU-s on 2 cores > 2 batches
    ],
)
def test_margin(servers, forks, clocks, cores, margin):
    assert _gate.gate_margin(servers, forks, clocks=clocks, cores=cores, load=0.5) == pytest.approx(margin)
    assert gate_margin(servers, forks=forks, clocks=clocks, cores=cores, load=0.5) == pytest.approx(margin)


@pytest.mark.parametrize(
    ("load", "cores", "margin"),
    [
        (4.0, 2, 0.47),  # up to 2 runnable per core: as measured, unstretched
        (8.0, 2, 0.94),  # 4 per core: every step waits twice as long
        (20.0, 2, 2.35),  # a whole test suite on 2 cores (the launch's ranks 0.67 s apart with 0.47 s)
        (20.0, 16, 0.47),  # the same load on 16 cores
    ],
)
def test_a_loaded_controller_stretches_the_margin(load, cores, margin):
    assert _gate.gate_margin(2, 5, clocks=[{"rtt": 0.01}], cores=cores, load=load) == pytest.approx(margin)
    assert gate_margin(2, forks=5, clocks=[{"rtt": 0.01}], cores=cores, load=str(load)) == pytest.approx(margin)


def test_cores_and_load_default_to_this_machine(monkeypatch):
    monkeypatch.setattr(_gate.os, "cpu_count", lambda: 1)
    monkeypatch.setattr(_gate.os, "getloadavg", lambda: (0.3, 0.2, 0.1))
    assert _gate.gate_margin(100, 100, clocks=[{"rtt": 0.0}]) == pytest.approx(0.2 + 100 * 0.1)
    monkeypatch.setattr(_gate.os, "getloadavg", lambda: (6.0, 0.2, 0.1))
    assert _gate.gate_margin(100, 100, clocks=[{"rtt": 0.0}]) == pytest.approx(3 * (0.2 + 100 * 0.1))


@pytest.mark.parametrize(
    "servers, forks, clocks, cores, message",
    [
        (0, 5, None, 2, "servers must be at least 1, got 0"),
        ("x", 5, None, 2, "servers must be a whole number, got 'x'"),
        (2, 0, None, 2, "forks must be at least 1"),
        (2, None, None, 2, "forks must be a whole number, got None"),
        (2, 5, None, 0, "cores must be at least 1"),
        (2, 5, "0.1", 2, "clocks must be a list of clock readings"),
        (2, 5, {"rtt": 0.1}, 2, "clocks must be a list of clock readings"),
        (2, 5, [{"rtt": "slow"}], 2, "a clock reading's rtt is not a number"),
    ],
)
def test_bad_input_is_refused_naming_it(servers, forks, clocks, cores, message):
    with pytest.raises(ClusterSpecError, match=message):
        _gate.gate_margin(servers, forks, clocks=clocks, cores=cores, load=0.0)
    with pytest.raises(AnsibleFilterError, match="gate_margin: " + message):
        gate_margin(servers, forks=forks, clocks=clocks, cores=cores, load=0.0)


@pytest.mark.parametrize(("load", "message"), [("busy", "load must be a number"), (-1, "load must be 0 or more, got -1")])
def test_a_bad_load_is_refused_naming_it(load, message):
    with pytest.raises(ClusterSpecError, match=message):
        _gate.gate_margin(2, 5, cores=2, load=load)
    with pytest.raises(AnsibleFilterError, match="gate_margin: " + message):
        gate_margin(2, forks=5, cores=2, load=load)


def test_filter_is_registered_under_its_name():
    assert FilterModule().filters() == {"gate_margin": gate_margin}
