# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""One error type for the controller-side cluster logic, and its translation for filters.

The logic in ``plugin_utils`` raises :class:`ClusterSpecError` (a ``ValueError``) so it can be
used from any plugin or plain Python; the filters turn it into ``AnsibleFilterError`` with the
filter's name in front, so the operator sees which template line failed and why.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, TypeVar

from ansible.errors import AnsibleFilterError

F = TypeVar("F", bound=Callable[..., Any])


class ClusterSpecError(ValueError):
    """A rank table, device list or device selection that HCCL would refuse (or we cannot read)."""


def filter_errors(name: str) -> Callable[[F], F]:
    """Decorate a filter function: ``ClusterSpecError``/``TypeError`` become ``AnsibleFilterError``."""

    def decorate(func: F) -> F:
        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            try:
                return func(*args, **kwargs)
            except ClusterSpecError as exc:
                raise AnsibleFilterError(f"{name}: {exc}") from exc
            except TypeError as exc:  # unknown keyword argument, wrong arity
                raise AnsibleFilterError(f"{name}: {exc}") from exc

        return wrapper  # type: ignore[return-value]

    return decorate
