from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.ascend.cluster.plugins.filter.text_table import text_table


def test_columns_are_aligned_and_missing_values_dashed():
    rows = [{"host": "h1", "dev": 0, "ok": True}, {"host": "server-two", "dev": 12, "ok": False, "x": 1}, {"host": "h3"}]
    assert text_table(rows, ["host", "dev", "ok"]) == [
        "HOST        DEV  OK",
        "h1          0    yes",
        "server-two  12   no",
        "h3          -    -",
    ]


def test_custom_headers():
    assert text_table([{"a": 1}], ["a"], ["Alpha"]) == ["Alpha", "1"]


@pytest.mark.parametrize(
    "rows, columns, headers, message",
    [
        ([{"a": 1}], "a", None, "columns must be a non-empty list"),
        ([{"a": 1}], [], None, "columns must be a non-empty list"),
        ([{"a": 1}], ["a"], ["A", "B"], "headers has 2 entries but columns has 1"),
        ([["a"]], ["a"], None, "row 0 is not a mapping"),
    ],
)
def test_bad_input(rows, columns, headers, message):
    with pytest.raises(AnsibleFilterError, match=message):
        text_table(rows, columns, headers)
