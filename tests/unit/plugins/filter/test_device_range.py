"""Filter ascend.cluster.device_range: hccl_tools.py's "[0,8)" without its defects."""

from __future__ import annotations

import pytest

from ansible_collections.ascend.cluster.plugins.filter.rank_table import FilterModule, device_range
from tests.helpers.filters import refusal


def test_filter_is_registered_under_its_name():
    assert FilterModule().filters()["device_range"] is device_range


@pytest.mark.parametrize(
    "spec, chip, expected",
    [
        ("[0,8)", "910A", list(range(8))),
        ("[4,8)", "910A", [4, 5, 6, 7]),
        ("[0,16)", "A2", list(range(16))),  # hccl_tools.py silently gives one device
        ("[0, 8)", None, list(range(8))),  # hccl_tools.py crashes on the space
        (" [ 2 , 4 ) ", None, [2, 3]),
        ("[0,7]", "910A", list(range(8))),
        ("[10,16)", None, [10, 11, 12, 13, 14, 15]),
    ],
)
def test_ranges(spec, chip, expected):
    assert device_range(spec, chip=chip) == expected


@pytest.mark.parametrize(
    "spec, chip, message",
    [
        ("[0,16)", "910A", "'[0,16)' reaches device 15, but 910A has devices 0-7; use e.g. '[0,8)'"),
        ("[0,17)", None, "reaches device 16, but any known chip has devices 0-15"),
        ("[4,4)", None, "'[4,4)' holds no device"),
        ("[5,2)", None, "holds no device"),
        ("0,8", None, "'0,8' is not a device range: write '[first,end)'"),
        ("[0,8", None, "is not a device range"),
        ("[-1,8)", None, "is not a device range"),
        (8, None, "8 is not a device range"),
        ("[0,8)", "H100", "unknown chip 'H100'"),
    ],
)
def test_bad_ranges(spec, chip, message):
    assert message in refusal(device_range, spec, chip=chip)
