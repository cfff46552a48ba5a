"""Plays that tests of two tiers run alike (the simulated cluster and the test bed)."""

from __future__ import annotations

from pathlib import Path

FIREWALL_PLAY = """\
- name: Settle the firewall
  hosts: ascend
  gather_facts: false
  roles:
    - role: ascend.cluster.firewall
"""


def firewall_play(directory: Path) -> Path:
    """The play that runs role ascend.cluster.firewall on group ``ascend``, written to ``directory``/firewall.yml."""
    path = directory / "firewall.yml"
    path.write_text(FIREWALL_PLAY)
    return path
