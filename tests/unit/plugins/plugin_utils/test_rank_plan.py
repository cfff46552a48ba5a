"""rank_plan: the rank_table role's controller steps in one call, same results and refusals as the filters one by one."""

from __future__ import annotations

from typing import Any

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.ascend.cluster.plugins.filter.rank_table import (
    FilterModule,
    missing_device_ips,
    rank_layout,
    rank_plan,
    rank_table,
    select_devices,
    servers_from_facts,
)
from ansible_collections.ascend.cluster.plugins.plugin_utils._errors import ClusterSpecError
from ansible_collections.ascend.cluster.plugins.plugin_utils._rank import plan as _rank_plan


def host(name: str, index: int, chip: str | None = "910B", devices: int = 8, ips: bool = True, **extra: Any) -> dict:
    """One host's variables as the play holds them after hccn_facts."""
    found = [{"device_id": d, "device_ip": f"198.19.{d}.{index}" if ips else ""} for d in range(devices)]
    return {
        "inventory_hostname": name,
        "ansible_host": f"10.0.0.{index}",
        "ansible_facts": {"ascend_npu": {"chip": chip, "devices": found}},
        **extra,
    }


TWO = [host("h1", 1), host("h2", 2)]


@pytest.mark.parametrize(
    "hosts, options, sizes, rank0",
    [
        (TWO, {}, {"h1": 8, "h2": 8}, "10.0.0.1"),  # every device of every host
        (TWO, {"np": 8, "spread": True}, {"h1": 4, "h2": 4}, "10.0.0.1"),
        (TWO, {"np": 8}, {"h1": 8, "h2": 0}, "10.0.0.1"),  # whole servers first
        (TWO, {"npu_env": "10.0.0.2:2:01,10.0.0.1:2:01"}, {"h1": 2, "h2": 2}, "10.0.0.1"),  # server_id order
        (TWO, {"npu_env": "10.0.0.2:2:01,10.0.0.1:2:01", "order": "given"}, {"h1": 2, "h2": 2}, "10.0.0.2"),
        ([host("h1", 1, ips=False)], {"np": 8}, {"h1": 8}, "10.0.0.1"),  # one server: no IP needed (warned)
    ],
)
def test_plan_is_what_the_filters_give_one_by_one(hosts, options, sizes, rank0):
    warnings: list = []
    plan = _rank_plan.rank_plan(hosts, warn=warnings.append, **options)
    servers = servers_from_facts(hosts)
    assert plan["all_servers"] == servers
    assert {h: len(ranks) for h, ranks in plan["layout"]["hosts"].items()} == {
        h: n for h, n in sizes.items() if n or h in plan["layout"]["hosts"]
    }
    assert plan["layout"]["rank_size"] == sum(sizes.values())
    assert plan["layout"]["rank0_server_id"] == rank0
    assert plan["layout"] == rank_layout(plan["table"], plan["job_servers"])
    if "npu_env" not in options:
        total = sum(len(s["devices"]) for s in servers)
        expected = select_devices(servers, options.get("np") or total, chip="910B", spread=options.get("spread", False))
        assert plan["job_servers"] == expected
        assert plan["table"] == rank_table(expected, chip="910B")
    assert bool(warnings) == (not hosts[0]["ansible_facts"]["ascend_npu"]["devices"][0]["device_ip"])


NO_IPS = [host("h1", 1, ips=False), host("h2", 2, ips=False)]


@pytest.mark.parametrize(
    "hosts, options, message",
    [
        ([{"inventory_hostname": "h1"}], {}, r"^host h1 has no 'ascend_npu' facts"),
        ([], {}, r"^servers_from_facts got no hosts"),
        (
            [host("h1", 1), host("h2", 2, chip="910A")],
            {},
            r"^the play mixes chip generations \(910B, 910A\): one HCCL job runs on one generation",
        ),
        (TWO, {"np": 17}, r"^np=17 is not possible with the available 910B devices.*\. No rank table was written\.$"),
        (TWO, {"npu_env": "10.0.0.9:8"}, r"10\.0\.0\.9.*\. No rank table was written\.$"),
        (
            NO_IPS,
            {"np": 8, "spread": True},
            r"^8 selected devices have no device IP, which HCCL needs when more than one server takes part: "
            r"h1 \(10\.0\.0\.1\) devices 0-3; h2 \(10\.0\.0\.2\) devices 0-3\. Give every device its IP with "
            r"ansible-playbook ascend\.cluster\.prepare \(the IP plan: roles/device_ip/README\.md\), then run this again$",
        ),
        (
            [host("h1", 1, chip="A3", devices=4), host("h2", 2, chip="A3", devices=4)],
            {},
            r"^a version 1\.2 \(A3 SuperPoD\) rank table needs ids that hccn_facts cannot read: set ascend_super_pod_id and "
            r"ascend_super_device_ids \(\{device_id: super_device_id\}\) in the inventory for h1, h2$",
        ),
        (TWO, {"template2": {"colour": "blue"}}, r"unknown option\(s\) colour\. No rank table was written\.$"),
    ],
)
def test_refusals_carry_the_operators_message(hosts, options, message):
    with pytest.raises(ClusterSpecError, match=message):
        _rank_plan.rank_plan(hosts, **options)
    # the filter returns it alone with errors='return' (the role's fail task prints it), or raises naming itself
    assert isinstance(rank_plan(hosts, errors="return", **options), str)
    with pytest.raises(AnsibleFilterError, match=r"^rank_plan: "):
        rank_plan(hosts, **options)


def test_one_selected_device_without_ip_is_named_in_the_singular():
    hosts = [host("h1", 1), host("h2", 2)]
    hosts[1]["ansible_facts"]["ascend_npu"]["devices"][3]["device_ip"] = ""
    with pytest.raises(ClusterSpecError, match=r"^1 selected device has no device IP, .*: h2 \(10\.0\.0\.2\) device 3\. Give"):
        _rank_plan.rank_plan(hosts)
    assert missing_device_ips(servers_from_facts(hosts))["device_count"] == 1


@pytest.mark.parametrize("spread, allow", [("yes", "no"), (True, False), ("true", "false")])
def test_filter_takes_booleans_as_the_role_passes_them(spread, allow):
    plan = rank_plan(TWO, np=8, spread=spread, allow_partial_servers=allow)
    assert [len(plan["layout"]["hosts"][h]) for h in ("h1", "h2")] == [4, 4]


def test_filter_refuses_a_non_boolean_spread():
    with pytest.raises(AnsibleFilterError, match=r"^rank_plan: The value 'sometimes' is not a valid boolean"):
        rank_plan(TWO, np=8, spread="sometimes")


def test_filter_is_registered_under_its_name():
    assert FilterModule().filters()["rank_plan"] is rank_plan


def test_filter_refuses_an_unknown_option_naming_itself():
    with pytest.raises(AnsibleFilterError, match=r"^rank_plan: .*unexpected keyword argument 'colour'"):
        rank_plan(TWO, colour="blue")


@pytest.mark.parametrize(
    "options, refusal",
    [
        (
            {"npu_env": "10.0.0.1:4:0123,10.0.0.2:4:0123"},
            "server 10.0.0.1: 910A clusters use all 8 devices of every server (8 x N), got 4 {0, 1, 2, 3}; use whole servers, "
            "or set ascend_rank_table_allow_partial_910a=true if your CANN allows 1/2/4 x N. No rank table was written.",
        ),
        (
            {"np": 3},
            "np=3 is not possible with the available 910A devices (per server: 10.0.0.1: 8, 10.0.0.2: 8): possible np values "
            "are 1, 2, 4, 8, 16; 910A clusters need 8 devices per server unless ascend_rank_table_allow_partial_910a=true. "
            "No rank table was written.",
        ),
    ],
    ids=["ring rule", "np"],
)
def test_a_910a_refusal_names_the_roles_variable_not_the_filters_option(options, refusal):
    """Issue 25 item 3: the hint named allow_partial_servers=true, which every playbook refuses ("did you mean allow_partial?")."""
    hosts = [host("h1", 1, chip="910A"), host("h2", 2, chip="910A")]
    with pytest.raises(ClusterSpecError) as info:
        _rank_plan.rank_plan(hosts, **options)
    assert str(info.value) == refusal
    # the switch it names lifts the ring rule
    plan = _rank_plan.rank_plan(hosts, allow_partial_servers=True, npu_env="10.0.0.1:4:0123,10.0.0.2:4:0123")
    assert plan["layout"]["rank_size"] == 8


UNCLEAR = (
    "npu-smi info's Name column 'Ascend910' (line '| 0     Ascend910           | OK            | 86.3        37                "
    "0    / 0             |') is the generic name A3 boards print, but the table has no Chip Phy-ID column: A3 or not is unclear"
)


def test_a_server_whose_chip_is_unclear_is_refused_naming_the_field_and_line():
    """Issue 33 item 4: hccn_facts could not tell the chip (chip null, chip_problem naming the line); the rank table's
    chip rules need it, so the plan fails closed rather than build a table with no chip's rules."""
    unclear = host("h2", 2, chip=None)
    unclear["ansible_facts"]["ascend_npu"]["chip_problem"] = UNCLEAR
    with pytest.raises(ClusterSpecError) as caught:
        _rank_plan.rank_plan([host("h1", 1), unclear])
    assert str(caught.value).startswith("the chip of a server is unclear")
    assert "h2: " + UNCLEAR in str(caught.value) and str(caught.value).endswith(_rank_plan.NOT_WRITTEN)
    # a server whose npu-smi was not read at all (no problem named) is planned as before
    unread = host("h2", 2, chip=None)
    assert len(_rank_plan.rank_plan([host("h1", 1), unread])["job_servers"]) == 2
