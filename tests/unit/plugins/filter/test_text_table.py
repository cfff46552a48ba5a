from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.ascend.cluster.plugins.filter.common import text_table


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


def test_problem_rows_come_first_and_ok_rows_beyond_max_ok_are_counted():
    rows = [{"name": f"d{i}", "result": "OK"} for i in range(6)] + [{"name": "bad", "result": "FAIL"}]
    lines = text_table(rows, ["name", "result"], ok_column="result", max_ok=2, more_hint="-e all=true")
    assert lines == ["NAME  RESULT", "bad   FAIL", "d0    OK", "d1    OK", "... 4 more row(s) with RESULT OK; -e all=true"]
    assert len(text_table(rows, ["name", "result"], ok_column="result")) == 8  # max_ok none: every row
    assert text_table(rows, ["name"], ok_column="result", max_ok=-1)[1] == "bad"


def test_bad_ok_arguments_are_refused():
    with pytest.raises(AnsibleFilterError, match="ok_values must be a list"):
        text_table([{"a": 1}], ["a"], ok_column="a", ok_values="OK")
    with pytest.raises(AnsibleFilterError, match="max_ok must be a whole number"):
        text_table([{"a": 1}], ["a"], ok_column="a", max_ok="3")
