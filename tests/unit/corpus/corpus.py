"""The corpus of real outputs (tests/corpus/README.md): each family's index and its samples, for the parsers' tests."""

from __future__ import annotations

import os

import yaml

CORPUS = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "corpus")


def entries(family: str) -> list:
    """The index entries of ``tests/corpus/<family>/index.yml``, each with ``path`` (the sample's file) added."""
    folder = os.path.join(CORPUS, family)
    with open(os.path.join(folder, "index.yml"), encoding="utf-8") as f:
        listed = yaml.safe_load(f) or []
    return [dict(entry, path=os.path.join(folder, entry["file"])) for entry in listed]


def text(entry: dict) -> str:
    with open(entry["path"], encoding="utf-8") as f:
        return f.read()


def of_kind(family: str, kind) -> list:
    """The entries whose ``command`` ``kind(command)`` accepts, as pytest params named by their file."""
    import pytest

    return [pytest.param(entry, id=entry["file"]) for entry in entries(family) if kind(entry["command"])]
