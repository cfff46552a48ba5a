"""Every npu-smi sample of the corpus (tests/corpus/npu_smi) read by the parsers, asserting the values its index lists."""

from __future__ import annotations

import re

import pytest

from ansible_collections.ascend.cluster.plugins.module_utils import _npu_smi as n
from ansible_collections.ascend.cluster.plugins.module_utils import _sw_versions as v
from tests.unit.corpus.corpus import of_kind, text


def _command(pattern: str):
    return lambda command: re.search(pattern, command) is not None


TABLES = of_kind("npu_smi", lambda command: command.strip() == "npu-smi info")
MAPS = of_kind("npu_smi", _command(r"info -m$"))
BOARDS = of_kind("npu_smi", _command(r"-t board"))
HEALTH = of_kind("npu_smi", _command(r"-t health"))
LISTS = of_kind("npu_smi", _command(r"info -l$"))


@pytest.mark.parametrize("entry", TABLES)
def test_every_npu_smi_info_sample_reads_its_version_devices_chip_and_health(entry):
    raw, expect = text(entry), entry["expect"]
    table = n.parse_info_table(raw)
    assert n.parse_version(raw) == expect["version"]
    assert sorted(n.chip_devices(table).values()) == expect["devices"]
    chip, problem = n.read_chip(table)
    assert chip == expect["chip"]
    assert (problem is None) == (expect["chip"] is not None)
    assert dict((d, h) for d, h in n.device_health(table).items() if h != "OK") == expect["unhealthy"]


@pytest.mark.parametrize("entry", TABLES)
def test_every_npu_smi_info_sample_reads_its_processes_or_says_it_has_none(entry):
    raw, expect = text(entry), entry["expect"]
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


@pytest.mark.parametrize("entry", MAPS)
def test_every_chip_map_sample_reads_its_rows_and_logic_ids(entry):
    rows = n.parse_map(text(entry))
    assert [[r["npu_id"], r["chip_id"], r["logic_id"], r["phy_id"], r["name"]] for r in rows] == entry["expect"]["rows"]
    assert dict(("%d %d" % key, logic) for key, logic in n.logic_ids(rows).items()) == entry["expect"]["logic"]


@pytest.mark.parametrize("entry", BOARDS)
def test_every_board_sample_reads_its_firmware_compatibility_and_ids(entry):
    board = v.parse_board(text(entry))
    assert {key: board[key] for key in entry["expect"]} == entry["expect"]


@pytest.mark.parametrize("entry", HEALTH)
def test_every_health_sample_reads_its_status_codes_and_information(entry):
    health = n.parse_health(text(entry))
    assert {key: health[key] for key in entry["expect"]} == entry["expect"]


@pytest.mark.parametrize("entry", LISTS)
def test_every_npu_list_sample_reads_its_npus_or_refuses_what_does_not_add_up(entry):
    expect = entry["expect"]
    if "error" in expect:
        with pytest.raises(n.NpuSmiParseError, match=expect["error"]):
            n.parse_info_list(text(entry))
    else:
        assert [[npu["npu_id"], npu["chip_count"]] for npu in n.parse_info_list(text(entry))] == expect["npus"]


def test_the_corpus_holds_every_npu_smi_format_the_collection_reads():
    """A format the parsers read and no sample shows would go untested on real text."""
    assert len(TABLES) >= 10 and MAPS and BOARDS and HEALTH and LISTS
    chips = [p.values[0]["expect"]["chip"] for p in TABLES]
    assert {"910A", "910B", "A3"} <= set(chips)
