"""What the deprecation guard's tests run (tests/unit/helpers and tests/integration alike): a module that deprecates, a play."""

from __future__ import annotations

import sys
import textwrap

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
