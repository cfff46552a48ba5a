"""The deprecation guard of tests/helpers/ansible_cli.py: a run that prints a deprecation fails."""

from __future__ import annotations

import pytest

from tests.helpers.ansible_cli import DeprecationFound, ansible_env, fail_on_deprecation


def test_runs_have_deprecation_warnings_on():
    assert ansible_env()["ANSIBLE_DEPRECATION_WARNINGS"] == "True"


def test_clean_output_passes():
    fail_on_deprecation("PLAY RECAP\nlocalhost : ok=1 changed=0\n[WARNING]: something else\n", "a run")


def test_a_deprecation_line_fails_and_is_quoted():
    output = "TASK [x]\n[DEPRECATION WARNING]: INJECT_FACTS_AS_VARS default to `True` is deprecated.\nOrigin: roles/r/tasks/t.yml:7:9\nok"
    with pytest.raises(DeprecationFound, match=r"a run printed 1 deprecation warning\(s\)") as caught:
        fail_on_deprecation(output, "a run")
    assert "INJECT_FACTS_AS_VARS default" in str(caught.value) and "Origin: roles/r/tasks/t.yml:7:9" in str(caught.value)
