"""Filter ascend.cluster.select_devices: np devices picked by the chip's rules."""

from __future__ import annotations

from collections.abc import Mapping

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.ascend.cluster.plugins.filter.rank_table import FilterModule, rank_table, select_devices
from tests.helpers.clusters import a2_cluster, seed001_server, server
from tests.helpers.filters import refusal


def _cluster(n=2):
    return [seed001_server(f"10.0.0.{i + 1}", 6 + 2 * i) for i in range(n)]


def _picked(selection):
    return [(s["server_id"], [d["device_id"] for d in s["devices"]]) for s in selection]


def test_filter_is_registered_under_its_name():
    assert FilterModule().filters()["select_devices"] is select_devices


CASES = [
    # (name, servers, np, options, expected picks)
    ("910A one device", _cluster(), 1, {"chip": "910A"}, [("10.0.0.1", [0])]),
    ("910A pair in ring 0", _cluster(), 2, {"chip": "910A"}, [("10.0.0.1", [0, 1])]),
    ("910A four in ring 0", _cluster(), 4, {"chip": "910A"}, [("10.0.0.1", [0, 1, 2, 3])]),
    ("910A whole server", _cluster(), 8, {"chip": "910A"}, [("10.0.0.1", list(range(8)))]),
    ("910A two whole servers", _cluster(), 16, {"chip": "910A"}, [("10.0.0.1", list(range(8))), ("10.0.0.2", list(range(8)))]),
    (
        "910A four from ring 1 when ring 0 is busy",
        [server("10.0.0.1", {0: "192.168.0.1", 1: "192.168.0.2", 4: "192.168.0.5", 5: "192.168.0.6", 6: "192.168.0.7", 7: "192.168.0.8"})],
        4,
        {"chip": "910A"},
        [("10.0.0.1", [4, 5, 6, 7])],
    ),
    (
        "910A pair skips a server whose ring is split",
        [
            server("10.0.0.1", {3: "192.168.0.4", 4: "192.168.0.5"}),
            server("10.0.0.2", {2: "192.168.1.3", 3: "192.168.1.4"}),
        ],
        2,
        {"chip": "910A"},
        [("10.0.0.2", [2, 3])],
    ),
    (
        "910A 8 devices: one whole server even with partial servers allowed",
        _cluster(3),
        8,
        {"chip": "910A", "allow_partial_servers": True},
        [("10.0.0.1", list(range(8)))],
    ),
    (
        "910A 3 x 4 with partial servers allowed",
        _cluster(3),
        12,
        {"chip": "910A", "allow_partial_servers": True},
        [("10.0.0.1", [0, 1, 2, 3]), ("10.0.0.2", [0, 1, 2, 3]), ("10.0.0.3", [0, 1, 2, 3])],
    ),
    ("A2 whole servers first", a2_cluster(3), 32, {"chip": "A2"}, [("10.0.0.1", list(range(16))), ("10.0.1.1", list(range(16)))]),
    ("A2 same count on each server", a2_cluster(3), 24, {"chip": "A2"}, [("10.0.0.1", list(range(12))), ("10.0.1.1", list(range(12)))]),
    ("A2 odd count on one server", a2_cluster(2), 5, {"chip": "A2"}, [("10.0.0.1", [0, 1, 2, 3, 4])]),
    ("np as string from -e np=16", _cluster(), "16", {}, [("10.0.0.1", list(range(8))), ("10.0.0.2", list(range(8)))]),
    (
        "spread: np=8 on 2 x 8 runs 4 + 4",
        a2_cluster(2, 8),
        8,
        {"chip": "A2", "spread": True},
        [("10.0.0.1", [0, 1, 2, 3]), ("10.0.1.1", [0, 1, 2, 3])],
    ),
    (
        "spread: as many servers as divide np",
        a2_cluster(3, 8),
        8,
        {"chip": "A2", "spread": True},
        [("10.0.0.1", [0, 1, 2, 3]), ("10.0.1.1", [0, 1, 2, 3])],
    ),
    (
        "spread: np=16 on 2 x 8 still whole servers",
        a2_cluster(2, 8),
        16,
        {"chip": "A2", "spread": True},
        [("10.0.0.1", list(range(8))), ("10.0.1.1", list(range(8)))],
    ),
    ("spread: a prime np stays on one server", a2_cluster(2, 8), 7, {"chip": "A2", "spread": True}, [("10.0.0.1", list(range(7)))]),
    (
        "spread: skips a layout a small server cannot hold",
        [server("10.0.0.1", {i: f"192.168.0.{i + 1}" for i in range(8)}), server("10.0.0.2", {0: "192.168.1.1", 1: "192.168.1.2"})],
        8,
        {"spread": True},
        [("10.0.0.1", list(range(8)))],
    ),
    ("spread on 910A: 8 x N unless partial servers", _cluster(), 8, {"chip": "910A", "spread": True}, [("10.0.0.1", list(range(8)))]),
    (
        "spread on 910A with partial servers: one HCCS ring on each",
        _cluster(),
        8,
        {"chip": "910A", "spread": True, "allow_partial_servers": True},
        [("10.0.0.1", [0, 1, 2, 3]), ("10.0.0.2", [0, 1, 2, 3])],
    ),
]


@pytest.mark.parametrize("servers, np, options, expected", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_selection(servers, np, options, expected):
    assert _picked(select_devices(servers, np, **options)) == expected


def test_selection_keeps_other_keys_and_feeds_rank_table():
    servers = _cluster()
    servers[1]["host"] = "node2"
    chosen = select_devices(servers, 16, chip="910A")
    assert chosen[1]["host"] == "node2"
    assert chosen[1]["devices"][0] == {"device_id": 0, "device_ip": "192.1.27.8"}
    assert rank_table(chosen, chip="910A")["server_count"] == "2"


class _ReadOnlyView(Mapping):
    """A mapping that is not a dict and refuses deepcopy, like Ansible's lazy template containers
    (whose deepcopy copies their templar: deprecated in ansible-core 2.21, an error in 2.25)."""

    def __init__(self, data):
        self._data = data

    def __getitem__(self, key):
        value = self._data[key]
        if isinstance(value, dict):
            return _ReadOnlyView(value)
        return tuple(_ReadOnlyView(v) if isinstance(v, dict) else v for v in value) if isinstance(value, list) else value

    def __iter__(self):
        return iter(self._data)

    def __len__(self):
        return len(self._data)

    def __deepcopy__(self, memo):
        raise AssertionError("select_devices deep-copied its input")


def test_selection_is_new_plain_data_without_deepcopy_of_the_input():
    servers = _cluster()
    servers[0]["labels"] = {"rack": ["r1", {"row": 2}]}
    view = [_ReadOnlyView(s) for s in servers]
    chosen = select_devices(view, 4, chip="910A")
    assert chosen == [
        {
            "server_id": "10.0.0.1",
            "labels": {"rack": ["r1", {"row": 2}]},
            "devices": [{"device_id": d, "device_ip": servers[0]["devices"][d]["device_ip"]} for d in range(4)],
        }
    ]
    kinds = {type(chosen[0]), type(chosen[0]["labels"]), type(chosen[0]["labels"]["rack"][1]), type(chosen[0]["devices"][0])}
    assert kinds == {dict} and {type(chosen[0]["labels"]["rack"]), type(chosen[0]["devices"])} == {list}
    chosen[0]["devices"][0]["device_ip"] = "changed"
    chosen[0]["labels"]["rack"][1]["row"] = 9
    assert servers[0]["devices"][0]["device_ip"] != "changed" and servers[0]["labels"]["rack"][1]["row"] == 2


BAD = [
    (
        "910A 3 devices",
        _cluster(),
        3,
        {"chip": "910A"},
        "np=3 is not possible with the available 910A devices (per server: 10.0.0.1: 8, 10.0.0.2: 8): possible np values"
        " are 1, 2, 4, 8, 16; 910A clusters need 8 devices per server unless allow_partial_servers=true",
    ),
    ("910A 12 devices", _cluster(), 12, {"chip": "910A"}, "possible np values are 1, 2, 4, 8, 16"),
    (
        "910A partial still needs enough servers",
        _cluster(),
        6,
        {"chip": "910A", "allow_partial_servers": True},
        "possible np values are 1, 2, 4, 8, 16",
    ),
    ("more than there is", a2_cluster(2), 33, {"chip": "A2"}, "np=33 is not possible"),
    ("A2 prime beyond one server", a2_cluster(2), 17, {"chip": "A2"}, "possible np values are 1, 2, 3"),
    ("zero", _cluster(), 0, {}, "np must be at least 1"),
    ("not a number", _cluster(), "all", {}, "np must be a positive whole number of devices, got 'all'"),
    ("not a list", {"server_id": "x"}, 8, {}, "must be a list of servers"),
    ("spread not a bool", _cluster(), 8, {"spread": "yes"}, "spread must be true or false, got 'yes'"),
    ("spread cannot make an impossible np possible", a2_cluster(2, 8), 17, {"chip": "A2", "spread": True}, "np=17 is not possible"),
    ("device beyond the chip", [server("10.0.0.1", {9: "192.168.0.9"})], 1, {"chip": "910A"}, "device_id 9 is out of range for 910A"),
]


@pytest.mark.parametrize("servers, np, options, message", [c[1:] for c in BAD], ids=[c[0] for c in BAD])
def test_impossible_requests_say_what_is_possible(servers, np, options, message):
    assert message in refusal(select_devices, servers, np, **options)


def test_long_lists_of_possible_counts_are_shortened():
    with pytest.raises(AnsibleFilterError) as info:
        select_devices(a2_cluster(64), 64 * 16 + 1, chip="A2")
    assert str(info.value).endswith(", ... 1024")
