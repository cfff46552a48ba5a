"""Fixtures for the simulator's own tests: simulated hosts in a temporary directory.

Every test drives the real entry points (``simulator/bin/*``) as subprocesses, the way the
collection's modules do, so stdout, stderr and exit codes are the ones users see.
"""

from __future__ import annotations

import pytest

from tests.simulator.simhelpers import Host


@pytest.fixture
def make_host(tmp_path):
    """Factory: ``make_host(name="h0", chip="910B", devices=None, settle=0, shared_fabric=True)``."""
    fabric = tmp_path / "fabric"

    def make(name="h0", chip="910B", devices=None, settle=0.0, shared_fabric=True, extra=()):
        return Host(tmp_path, name, chip=chip, devices=devices, settle=settle, fabric=fabric if shared_fabric else None, extra=extra)

    return make


@pytest.fixture
def host(make_host):
    """A 910B host with 8 devices and no IPs, net_health settle 0."""
    return make_host()
