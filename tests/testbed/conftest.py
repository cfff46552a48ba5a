"""The ``bed`` fixture: one 3-host test bed for the whole session, always taken down."""

from __future__ import annotations

import os
from typing import Iterator

import pytest

from tests.testbed.harness import Bed, leftovers, unique_prefix

BED_HOSTS = 3


@pytest.fixture(scope="session")
def bed() -> Iterator[Bed]:
    if os.geteuid() != 0:
        pytest.fail("the test bed needs root (network namespaces, bridges, sshd): run pytest as root")
    prefix = unique_prefix()
    try:
        yield Bed.up(prefix, BED_HOSTS)
    finally:
        Bed(prefix).down()
    left = leftovers(prefix)
    assert not left, f"bed.py down left {left} behind"


@pytest.fixture(scope="module")
def launch_bed(bed):
    """The session bed with device IPs on every host, and a run root on the shared /var/tmp (test_launch_bed.py's
    ``with_device_ips``), for the launch tests of any module."""
    from tests.testbed.test_launch_bed import with_device_ips

    yield from with_device_ips(bed)
