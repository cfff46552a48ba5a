"""The deprecation guard of tests/helpers/ansible_cli.py: a run that prints a deprecation fails."""

from __future__ import annotations

import sys
import textwrap

import pytest

from tests.helpers.ansible_cli import DeprecationFound, ansible_env, fail_on_deprecation

# A module that reports a deprecation the way any module (or ansible-core itself) does.
DEPRECATING_MODULE = textwrap.dedent(
    """\
    from ansible.module_utils.basic import AnsibleModule


    def main():
        module = AnsibleModule(argument_spec={}, supports_check_mode=True)
        module.deprecate("the guard test's own deprecation", version="99.0")
        module.exit_json(changed=False)


    if __name__ == "__main__":
        main()
    """
)

PLAY = textwrap.dedent(
    f"""\
    - name: One task
      hosts: localhost
      connection: local
      gather_facts: false
      vars:
        ansible_python_interpreter: {sys.executable}
      tasks:
        - name: Run the module
          {{module}}: {{{{}}}}
    """
)


def test_runs_have_deprecation_warnings_on():
    assert ansible_env()["ANSIBLE_DEPRECATION_WARNINGS"] == "True"


def test_clean_output_passes():
    fail_on_deprecation("PLAY RECAP\nlocalhost : ok=1 changed=0\n[WARNING]: something else\n", "a run")


def test_a_deprecation_line_fails_and_is_quoted():
    output = "TASK [x]\n[DEPRECATION WARNING]: INJECT_FACTS_AS_VARS default to `True` is deprecated.\nOrigin: roles/r/tasks/t.yml:7:9\nok"
    with pytest.raises(DeprecationFound, match=r"a run printed 1 deprecation warning\(s\)") as caught:
        fail_on_deprecation(output, "a run")
    assert "INJECT_FACTS_AS_VARS default" in str(caught.value) and "Origin: roles/r/tasks/t.yml:7:9" in str(caught.value)
