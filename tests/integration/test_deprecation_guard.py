"""The deprecation guard on a real ansible-playbook run: a module's deprecation fails the test run."""

from __future__ import annotations

import pytest

from tests.helpers.ansible_cli import DeprecationFound, run_playbook
from tests.helpers.deprecation import DEPRECATING_MODULE, PLAY


def test_a_real_run_that_deprecates_fails(tmp_path):
    (tmp_path / "library").mkdir()
    (tmp_path / "library" / "deprecating.py").write_text(DEPRECATING_MODULE)
    (tmp_path / "library" / "quiet.py").write_text(DEPRECATING_MODULE.replace('module.deprecate(', '(lambda *a, **k: None)('))
    quiet = tmp_path / "quiet.yml"
    quiet.write_text(PLAY.format(module="quiet"))
    assert run_playbook(quiet).rc == 0
    play = tmp_path / "deprecating.yml"
    play.write_text(PLAY.format(module="deprecating"))
    with pytest.raises(DeprecationFound, match="the guard test's own deprecation"):
        run_playbook(play)
