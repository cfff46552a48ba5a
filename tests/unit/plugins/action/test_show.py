"""ascend.cluster.show prints its lines itself only where the stdout callback hides ok results.

The decision is ok_results_hidden(callback name, option getter); the real getter reads the
callback's display_ok_hosts from Ansible's configuration (one test uses it for the default callback).
"""

from __future__ import annotations

import pytest
from ansible import constants as C
from ansible.errors import AnsibleError
from ansible.plugins.loader import callback_loader

from ansible_collections.ascend.cluster.plugins.action import show


def options(**known):
    def get(name):
        if name not in known:
            raise AnsibleError(f"No config definition exists for 'display_ok_hosts' for {name!r} callback plugin.")
        return known[name]

    return get


@pytest.mark.parametrize(
    ("callback", "known", "hidden"),
    [
        ("default", {"default": False}, True),
        ("default", {"default": True}, False),
        # ansible-core keeps its own callbacks' options under the short name
        ("ansible.builtin.default", {"default": False}, True),
        ("ansible.legacy.default", {"default": False}, True),
        # a collection's callback built on the default one keeps its own name
        ("community.general.yaml", {"community.general.yaml": False}, True),
        ("community.general.yaml", {"default": False}, False),
        # callbacks without the option show ok results (or print the msg from the result)
        ("ascend.cluster.compact", {"default": False}, False),
        ("json", {}, False),
        ("minimal", {"default": False}, False),
    ],
)
def test_only_a_callback_that_hides_ok_results_gets_the_lines_printed(callback, known, hidden):
    assert show.ok_results_hidden(callback, options(**known)) is hidden


def test_the_default_callbacks_setting_is_read_from_the_environment(monkeypatch):
    callback_loader.get("default")  # loads its option definitions, as ansible-playbook does
    monkeypatch.setenv("ANSIBLE_DISPLAY_OK_HOSTS", "false")
    assert show.ok_results_hidden("default", show._display_ok_hosts) is True
    monkeypatch.setenv("ANSIBLE_DISPLAY_OK_HOSTS", "true")
    assert show.ok_results_hidden("ansible.builtin.default", show._display_ok_hosts) is False
    assert C.config.get_config_value("display_ok_hosts", plugin_type="callback", plugin_name="default") is True


@pytest.mark.parametrize(
    ("msg", "lines"),
    [(["a", "b"], ["a", "b"]), ("one\ntwo", ["one", "two"]), ("", []), ([1, None], ["1", "None"])],
)
def test_lines_of_a_list_or_a_string(msg, lines):
    assert show.lines_of(msg) == lines
