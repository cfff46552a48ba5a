"""Every npu-smi sample of the corpus (tests/corpus/npu_smi) read by the parsers, asserting the values its index lists."""

from __future__ import annotations

import re

import pytest

from ansible_collections.ascend.cluster.plugins.module_utils._npu import smi as n
from ansible_collections.ascend.cluster.plugins.module_utils._npu import versions as v
from tests.helpers import corpus


def of_kind(kind) -> list:
    """``pytest.param(entry, text)`` of every npu_smi sample whose ``command`` ``kind`` accepts (the flags' order varies)."""
    return [pytest.param(e, corpus.text("npu_smi", e), id=e["file"]) for e in corpus.index("npu_smi") if kind(e["command"])]


def _command(pattern: str):
    return lambda command: re.search(pattern, command) is not None


TABLES = of_kind(lambda command: command.strip() == "npu-smi info")
MAPS = of_kind(_command(r"info -m$"))
BOARDS = of_kind(_command(r"-t board"))
HEALTH = of_kind(_command(r"-t health"))
LISTS = of_kind(_command(r"info -l$"))


@pytest.mark.parametrize(("entry", "raw"), TABLES)
def test_every_npu_smi_info_sample_reads_its_version_devices_chip_and_health(entry, raw):
    expect = entry["expect"]
    table = n.parse_info_table(raw)
    assert n.parse_version(raw) == expect["version"]
    assert sorted(n.chip_devices(table).values()) == expect["devices"]
    chip, problem = n.read_chip(table)
    assert chip == expect["chip"]
    assert (problem is None) == (expect["chip"] is not None)
    assert dict((d, h) for d, h in n.device_health(table).items() if h != "OK") == expect["unhealthy"]


@pytest.mark.parametrize(("entry", "raw"), TABLES)
def test_every_npu_smi_info_sample_reads_its_processes_or_says_it_has_none(entry, raw):
    expect = entry["expect"]
    table = n.parse_info_table(raw)
    if expect["processes"] == "no section":
        with pytest.raises(n.NpuSmiParseError, match="process section"):
            n.parse_npu_processes(raw, table)
        with pytest.raises(n.NpuSmiParseError):
            n.read_info(raw)
    else:
        rows = n.parse_npu_processes(raw, table)
        assert [[row["device_id"], row["pid"], row["container_pid"]] for row in rows] == expect["processes"]
        assert sorted(n.read_info(raw)["health"]) == expect["devices"]


@pytest.mark.parametrize(("entry", "raw"), MAPS)
def test_every_chip_map_sample_reads_its_rows_and_logic_ids(entry, raw):
    rows = n.parse_map(raw)
    assert [[r["npu_id"], r["chip_id"], r["logic_id"], r["phy_id"], r["name"]] for r in rows] == entry["expect"]["rows"]
    assert dict(("%d %d" % key, logic) for key, logic in n.logic_ids(rows).items()) == entry["expect"]["logic"]


@pytest.mark.parametrize(("entry", "raw"), BOARDS)
def test_every_board_sample_reads_its_firmware_compatibility_and_ids(entry, raw):
    board = v.parse_board(raw)
    assert {key: board[key] for key in entry["expect"]} == entry["expect"]


@pytest.mark.parametrize(("entry", "raw"), HEALTH)
def test_every_health_sample_reads_its_status_codes_and_information(entry, raw):
    health = n.parse_health(raw)
    assert {key: health[key] for key in entry["expect"]} == entry["expect"]


@pytest.mark.parametrize(("entry", "raw"), LISTS)
def test_every_npu_list_sample_reads_its_npus_or_refuses_what_does_not_add_up(entry, raw):
    expect = entry["expect"]
    if "error" in expect:
        with pytest.raises(n.NpuSmiParseError, match=expect["error"]):
            n.parse_info_list(raw)
    else:
        assert [[npu["npu_id"], npu["chip_count"]] for npu in n.parse_info_list(raw)] == expect["npus"]


def test_the_corpus_holds_every_npu_smi_format_the_collection_reads():
    """A format the parsers read and no sample shows would go untested on real text."""
    assert len(TABLES) >= 10 and MAPS and BOARDS and HEALTH and LISTS
    chips = [p.values[0]["expect"]["chip"] for p in TABLES]
    assert len(corpus.index("npu_smi")) + len(corpus.index("versions")) >= 35  # the npu-smi part of issue 33
    assert {"910A", "910B", "A3"} <= set(chips)
