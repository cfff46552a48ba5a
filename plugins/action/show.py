# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action show: a table or summary line that is seen under any stdout callback.

``ansible.builtin.debug`` results are ``ok`` results, and the default callback with
``display_ok_hosts = false`` (``ANSIBLE_DISPLAY_OK_HOSTS=false``, a common quiet setting) drops
them: the roles' tables and summary lines vanished, unless a task pretended to have changed
something. This action returns the lines as its ``msg`` like debug (so every callback, AWX and
``ascend.cluster.compact`` get them as data) and, only when the stdout callback in use hides ``ok``
results, prints them itself, so they appear exactly once either way.
"""

from __future__ import annotations

from typing import Any

from ansible import constants as C
from ansible.errors import AnsibleError
from ansible.utils.display import Display

from ansible_collections.ascend.cluster.plugins.plugin_utils._action import Action

display = Display()

ARGUMENT_SPEC = {"msg": {"type": "raw", "required": True}}
# ansible-core stores the options of its own callbacks under their short names.
BUILTIN_PREFIXES = ("ansible.builtin.", "ansible.legacy.")


def ok_results_hidden(callback: str, option: Any) -> bool:
    """Whether the stdout callback ``callback`` hides ``ok`` results.

    ``option(name)`` returns the callback's ``display_ok_hosts`` setting, or raises
    :class:`AnsibleError` when the callback has no such option (json, minimal, compact, ...: they
    show ``ok`` results, or print these lines from the result).
    """
    names = [callback]
    names += [callback[len(p) :] for p in BUILTIN_PREFIXES if callback.startswith(p)]
    for name in names:
        try:
            return option(name) is False
        except (AnsibleError, KeyError):
            continue
    return False


def _display_ok_hosts(callback: str) -> Any:
    return C.config.get_config_value("display_ok_hosts", plugin_type="callback", plugin_name=callback)


def lines_of(msg: Any) -> list[str]:
    """The lines ``msg`` prints as: a list's items, or a string's lines."""
    if isinstance(msg, (list, tuple)):
        return [str(item) for item in msg]
    return str(msg).splitlines()


class ActionModule(Action):
    """Controller-only ``ascend.cluster.show``; see the module docstring."""

    _requires_connection = False

    ARGUMENT_SPEC = ARGUMENT_SPEC

    def act(self, args: dict, own: dict, task_vars: dict) -> dict:
        msg = args["msg"]
        # ansible.constants sets DEFAULT_STDOUT_CALLBACK from the configuration at import time.
        if ok_results_hidden(str(getattr(C, "DEFAULT_STDOUT_CALLBACK", "default")), _display_ok_hosts):
            for line in lines_of(msg):
                display.display(line)
        # As debug: the result is shown with its msg whatever the verbosity.
        return {"changed": False, "msg": msg, "_ansible_verbose_always": True}
