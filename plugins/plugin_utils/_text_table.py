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


def text_table(rows: Sequence[Mapping[str, Any]], columns: Sequence[str], headers: Sequence[str] | None = None) -> list[str]:
    """One header line plus one line per row, columns padded to their widest cell."""
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
