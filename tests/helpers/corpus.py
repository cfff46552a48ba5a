"""The corpus of real tool outputs (``tests/corpus/``): each family's ``index.yml`` and its samples.

``tests/corpus/README.md`` defines the layout and the index format. A family's unit tests take
:func:`samples` as their parameters, so every sample listed is read by the parser of its kind and
checked against its ``expect``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

CORPUS = Path(__file__).resolve().parents[1] / "corpus"
# The fields every index entry has (README.md); chip, driver and expect where they apply.
REQUIRED = ("file", "command", "source", "documented")


def index(family: str) -> list[dict[str, Any]]:
    """The entries of ``tests/corpus/<family>/index.yml``, in their order."""
    entries = yaml.safe_load((CORPUS / family / "index.yml").read_text(encoding="utf-8")) or []
    if not isinstance(entries, list):
        raise ValueError(f"{family}/index.yml is not a list")
    return entries


def text(family: str, entry: dict[str, Any]) -> str:
    """The sample's text, exactly as stored."""
    return (CORPUS / family / entry["file"]).read_text(encoding="utf-8")


def samples(family: str, command: str | None = None) -> list[Any]:
    """``pytest.param(entry, text, id=file)`` for every entry of ``family`` (those of ``command`` only, when given)."""
    import pytest

    return [
        pytest.param(entry, text(family, entry), id=entry["file"])
        for entry in index(family)
        if command is None or entry["command"] == command
    ]
