"""The corpus of real outputs (tests/corpus/README.md): every sample listed once, with its source, and none invented.

Each family's parser test reads every sample (tests/helpers/corpus.py); this one holds the index itself to the
README's rules, so a sample cannot sit in a folder unread or be listed without where it was published.
"""

from __future__ import annotations

import re

import pytest

from tests.helpers import corpus

FAMILIES = sorted(p.name for p in corpus.CORPUS.iterdir() if p.is_dir())
# The hccn_tool part of issue 33 (hccn_tool, hccn.conf, logs, hccl_test); the npu-smi part adds its own folders.
HCCN_PART = ("hccn_tool", "hccn_conf", "logs", "hccl_test")


@pytest.mark.parametrize("family", FAMILIES)
def test_every_file_is_listed_once_and_every_entry_has_a_file(family: str) -> None:
    files = sorted(p.name for p in (corpus.CORPUS / family).iterdir() if p.name != "index.yml")
    listed = [entry["file"] for entry in corpus.index(family)]
    assert sorted(listed) == files
    assert len(set(listed)) == len(listed)


@pytest.mark.parametrize("family", FAMILIES)
def test_every_entry_says_where_it_was_published_and_what_it_must_read_as(family: str) -> None:
    for entry in corpus.index(family):
        missing = [key for key in corpus.REQUIRED + ("expect",) if key not in entry]
        assert not missing, f"{family}/{entry.get('file')}: no {missing}"
        assert re.match(r"https://\S+", entry["source"]), f"{family}/{entry['file']}: the source is not an address"
        assert isinstance(entry["documented"], bool)


def test_the_hccn_part_has_at_least_30_samples() -> None:
    assert sum(len(corpus.index(family)) for family in HCCN_PART) >= 30


def test_the_npu_smi_part_has_at_least_35_samples_and_the_corpus_at_least_60() -> None:
    """Issue 33: npu-smi outputs and version files are the other half; the whole corpus must reach 60."""
    assert sum(len(corpus.index(family)) for family in ("npu_smi", "versions")) >= 35
    assert sum(len(corpus.index(family)) for family in FAMILIES) >= 60
