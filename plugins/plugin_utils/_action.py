# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The collection's one base class for action plugins: what every action did in its own way before.

A subclass says, as class attributes, what the base does for it, and implements :meth:`Action.act`:

- ``ARGUMENT_SPEC``: the options the action validates itself (an unknown option refused in one line naming it, then
  ``validate_argument_spec``: types, defaults, required). ``None``: the task's options are handed on as they are, and the
  module the action runs checks them with its own argument spec.
- ``OWN``: options the action consumes itself (documented with its module): taken out of the task's options before
  anything else, so the module never sees them; :meth:`act` gets them apart.
- ``NAMES_SERVER``: a failure's message begins with the server's inventory name, unless it names it already; an
  action on one server among many (a launch task's failures are joined into one line) says which. Controller-only
  actions (``_requires_connection = False``) name none.
- ``GUARDED``: :meth:`act` runs under :class:`plugin_utils._launch.interrupt.Guard` (``self.guard``), so an operator's
  Ctrl-C or SIGTERM to ansible-playbook arrives as :class:`~plugin_utils._launch.interrupt.Interrupted` inside it, once;
  :meth:`guarded` says per call whether it applies (for example, not in check mode).

ActionBase's own switches keep their defaults unless an action says otherwise: no file transfers, a connection
(``_requires_connection = False`` for a controller-only action), check mode supported, no async.

An action refuses with :class:`Refusal` (its message is the result's ``msg``); everything else it returns is the
task's result, merged over what ``ActionBase.run`` set up.
"""

from __future__ import annotations

from typing import Any, ClassVar

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

from ansible_collections.ascend.cluster.plugins.plugin_utils._launch import interrupt


class Refusal(Exception):
    """The action refuses the task; the message says what to fix."""


class Action(ActionBase):
    """Base of every ``ascend.cluster`` action plugin (see the module docstring)."""

    ARGUMENT_SPEC: ClassVar[dict | None] = None
    OWN: ClassVar[tuple] = ()
    NAMES_SERVER: ClassVar[bool] = True
    GUARDED: ClassVar[bool] = False

    _guard: interrupt.Guard | None = None

    @property
    def guard(self) -> interrupt.Guard:
        """The interrupt guard held around :meth:`act` (``GUARDED`` actions, while :meth:`guarded` said so)."""
        if self._guard is None:
            raise RuntimeError("the interrupt guard is held only while a GUARDED action acts")
        return self._guard

    @property
    def under_guard(self) -> bool:
        """Whether this call of :meth:`act` runs under the interrupt guard."""
        return self._guard is not None

    def run(self, tmp: Any = None, task_vars: dict | None = None) -> dict:
        task_vars = task_vars or {}
        result = super().run(tmp, task_vars)
        own = {name: self._task.args.pop(name) for name in self.OWN if name in self._task.args}
        if self.ARGUMENT_SPEC is not None:
            unknown = sorted(set(self._task.args) - set(self.ARGUMENT_SPEC))
            if unknown:  # said in one line, before the validator's longer text
                takes = ", ".join(sorted(self.ARGUMENT_SPEC))
                raise AnsibleActionFail(f"unknown options: {', '.join(unknown)} (this action takes: {takes})")
            args = self.validate_argument_spec(argument_spec=self.ARGUMENT_SPEC)[1]
        else:
            args = dict(self._task.args)
        try:
            if self.GUARDED and self.guarded(args):
                with interrupt.Guard() as guard:
                    self._guard = guard
                    try:
                        outcome = self.act(args, own, task_vars)
                    finally:
                        self._guard = None
            else:
                outcome = self.act(args, own, task_vars)
        except Refusal as exc:
            outcome = {"failed": True, "changed": False, "msg": str(exc)}
        result.update(outcome)
        if result.get("failed") and self.NAMES_SERVER and self._requires_connection:
            result["msg"] = self.named(result.get("msg"), task_vars)
        return result

    def act(self, args: dict, own: dict, task_vars: dict) -> dict:
        """The action's work: the task's result (its fields over ``ActionBase.run``'s)."""
        raise NotImplementedError

    def guarded(self, args: dict) -> bool:
        """Whether this call runs under the interrupt guard (``GUARDED`` actions; every call unless overridden)."""
        return True

    def module(self, name: str, args: dict, task_vars: dict, **kwargs: Any) -> dict:
        """Run the collection's module ``name`` (``ascend.cluster.<name>``, or a full name) on the task's server."""
        full = name if "." in name else f"ascend.cluster.{name}"
        return self._execute_module(module_name=full, module_args=args, task_vars=task_vars, **kwargs)

    def start_module(self, args: dict, task_vars: dict, module_name: str | None = None) -> dict:
        """Run the task's own module (or ``module_name``) with ``args``, async when the task says so (``async`` +
        ``poll: 0`` on a connection without native async: Ansible's wrapper); the temporary directory is removed after a
        call that was not async (an async one's wrapper still needs it)."""
        wrap_async = bool(self._task.async_val) and not self._connection.has_native_async
        result = self._execute_module(module_name=module_name, module_args=args, task_vars=task_vars, wrap_async=wrap_async)
        if not wrap_async:
            self._remove_tmp_path(self._connection._shell.tmpdir)
        return result

    @staticmethod
    def named(msg: Any, task_vars: dict) -> str:
        """``msg`` beginning with the server's inventory name, unless it names the server already."""
        text = "" if msg is None else str(msg)
        server = str(task_vars.get("inventory_hostname") or "")
        if not server or server in text:
            return text
        return f"{server}: {text}"
