# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""One error type for the controller-side cluster logic, and its translation for filters.

The logic in ``plugin_utils`` raises :class:`ClusterSpecError` (a ``ValueError``) so it can be
used from any plugin or plain Python; the filters turn it into ``AnsibleFilterError`` with the
filter's name in front, so the operator sees which template line failed and why.

A task that wants the message for an operator passes ``errors='return'``: the filter then returns
the message (a string, without the filter's name) instead of raising, and the next task fails
with it as a plain ``ansible.builtin.fail``; Ansible's wrapping ("Finalization of task args ...
The filter plugin ... failed") is not put in front of it, nor is it printed three times.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, TypeVar

from ansible.errors import AnsibleFilterError

F = TypeVar("F", bound=Callable[..., Any])


class ClusterSpecError(ValueError):
    """A rank table, device list or device selection that HCCL would refuse (or we cannot read)."""


def filter_errors(name: str) -> Callable[[F], Callable[..., Any]]:
    """Decorate a filter function: ``ClusterSpecError``/``TypeError`` become ``AnsibleFilterError``.

    The decorated filter takes one more keyword, ``errors``: V(strict) (default) raises,
    V(return) returns a ``ClusterSpecError``'s message instead of the filter's value.
    """

    def decorate(func: F) -> Callable[..., Any]:
        @functools.wraps(func)
        def wrapper(*args: Any, errors: str = "strict", **kwargs: Any) -> Any:
            if errors not in ("strict", "return"):
                raise AnsibleFilterError(f"{name}: errors must be 'strict' or 'return', not {errors!r}")
            try:
                return func(*args, **kwargs)
            except ClusterSpecError as exc:
                if errors == "return":
                    return str(exc)
                raise AnsibleFilterError(f"{name}: {exc}") from exc
            except TypeError as exc:  # unknown keyword argument, wrong arity
                raise AnsibleFilterError(f"{name}: {exc}") from exc

        return wrapper

    return decorate
