# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Render rows of dicts as aligned text lines: the summaries operators read in play output."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


class TableError(ValueError):
    """Bad arguments to text_table."""


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


def problems_first(
    rows: Sequence[Mapping[str, Any]], ok_column: str, ok_values: Sequence[Any] = ("OK",), max_ok: int | None = None
) -> tuple[list[Mapping[str, Any]], int]:
    """``(rows, hidden)``: the rows whose ``ok_column`` is not one of ``ok_values`` first (in their
    order), then the OK rows, of which only the first ``max_ok`` when it is not None; ``hidden`` OK
    rows were left out."""
    if isinstance(ok_values, (str, bytes)) or not isinstance(ok_values, Sequence):
        raise TableError(f"ok_values must be a list of values, got {ok_values!r}")
    if max_ok is not None and (isinstance(max_ok, bool) or not isinstance(max_ok, int)):
        raise TableError(f"max_ok must be a whole number or none, got {max_ok!r}")
    wanted = {_cell(v) for v in ok_values}
    bad = [r for r in rows if not isinstance(r, Mapping) or _cell(r.get(ok_column)) not in wanted]
    good = [r for r in rows if isinstance(r, Mapping) and _cell(r.get(ok_column)) in wanted]
    shown = good if max_ok is None or max_ok < 0 else good[:max_ok]
    return bad + shown, len(good) - len(shown)


def text_table(
    rows: Sequence[Mapping[str, Any]],
    columns: Sequence[str],
    headers: Sequence[str] | None = None,
    ok_column: str | None = None,
    ok_values: Sequence[Any] = ("OK",),
    max_ok: int | None = None,
    more_hint: str = "",
) -> list[str]:
    """One header line plus one line per row, columns padded to their widest cell.

    With ``ok_column`` the problem rows come first and only ``max_ok`` OK rows are listed (None or
    negative: all), followed by one line saying how many were left out (and ``more_hint``).
    """
    hidden = 0
    if ok_column is not None:
        rows, hidden = problems_first(rows, ok_column, ok_values, max_ok)
    lines = _render(rows, columns, headers)
    if hidden:
        shown = "/".join(_cell(v) for v in ok_values)
        lines.append(f"... {hidden} more row(s) with {str(ok_column).upper()} {shown}{'; ' + more_hint if more_hint else ''}")
    return lines


def _render(rows: Sequence[Mapping[str, Any]], columns: Sequence[str], headers: Sequence[str] | None) -> list[str]:
    if isinstance(columns, (str, bytes)) or not columns:
        raise TableError("columns must be a non-empty list of keys, e.g. ['host', 'device_id']")
    headers = list(headers) if headers is not None else [str(c).upper() for c in columns]
    if len(headers) != len(columns):
        raise TableError(f"headers has {len(headers)} entries but columns has {len(columns)}")
    body = []
    for index, row in enumerate(rows):
        if not isinstance(row, Mapping):
            raise TableError(f"row {index} is not a mapping: {row!r}")
        body.append([_cell(row.get(c)) for c in columns])
    widths = [max([len(h)] + [len(r[i]) for r in body]) for i, h in enumerate(headers)]
    return ["  ".join(cell.ljust(widths[i]) for i, cell in enumerate(line)).rstrip() for line in [list(headers)] + body]
