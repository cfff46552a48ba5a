"""What the tests of the collection's filters share: how a refusal must read."""

from __future__ import annotations

from typing import Any, Callable

import pytest
from ansible.errors import AnsibleFilterError


def refusal(filter_func: Callable[..., Any], *args: Any, **kwargs: Any) -> str:
    """Call ``filter_func`` (a filter as its file defines it), which must refuse: its ``AnsibleFilterError``'s message,
    checked to start with the filter's name (``plugin_utils/_errors.filter_errors``), so a template's error says which
    filter failed."""
    with pytest.raises(AnsibleFilterError) as info:
        filter_func(*args, **kwargs)
    message = str(info.value)
    assert message.startswith(f"{filter_func.__name__}: "), message
    return message
