"""The launch's refusals, decided once on the controller: aoe_refusal (before any server is read) and
preflight_verdict (from every server's registered pre-flight result), case by case, with bad input."""

from __future__ import annotations

from typing import Any

import pytest

from ansible_collections.ascend.cluster.plugins.filter.launch import aoe_refusal, preflight_verdict
from ansible_collections.ascend.cluster.plugins.plugin_utils._launch import checks

RANKS = [{"rank_id": 0, "device_id": 0}]


def host(chip: str = "910B", ranks: list | None = None, env: dict | None = None, extra: dict | None = None, **more: Any) -> dict:
    return {
        "ansible_facts": {"ascend_npu": {"chip": chip}},
        "ascend_local_ranks": RANKS if ranks is None else ranks,
        "ascend_train_env": env or {},
        "ascend_launch_extra_env": extra or {},
        "ascend_aoe_bank_dir": "/bank",
        **more,
    }


def clock(server: str, status: str = "ok", offset: float = 0.001) -> dict:
    return {
        "server": server,
        "offset": offset,
        "uncertainty": 0.002,
        "rtt": 0.004,
        "samples": 5,
        "status": status,
        "msg": f"the clock of {server} is off" if status != "ok" else "",
    }


def pre(**result: Any) -> dict:
    return {"changed": False, "busy": [], "npu_smi_version": "24.1.0", **result}


@pytest.mark.parametrize(
    ("hostvars", "kwargs", "expected"),
    [
        ({"h1": host(), "h2": host()}, {}, ""),
        ({"h1": host()}, {"aoe": True, "use_library": True}, checks.TUNE_AND_USE),
        ({"h1": host()}, {"aoe": False, "use_library": True}, ""),
        ({"h1": host(chip="A3"), "h2": host(chip="A3", ranks=[])}, {"aoe": True}, checks.A3_MODE.format(server="h1")),
        ({"h1": host(chip="A3")}, {"aoe": True, "aoe_mode": 2}, ""),
        ({"h1": host(chip="A3")}, {"aoe": False}, ""),
        (
            {"h1": host(chip="A3"), "h2": host(chip="A3")},
            {"aoe": True},
            checks.A3_MODE.format(server="h1") + "; " + checks.A3_MODE.format(server="h2"),
        ),
        ({"h1": host(env={"TUNE_BANK_PATH": "/bank"})}, {}, ""),
        ({"h1": host(env={"TUNE_BANK_PATH": "/mine"})}, {"use_library": False}, ""),  # unmanaged: passed through
        ({"h1": host()}, {"aoe": True, "launcher": "torchrun"}, checks.PER_NODE.format(launcher="torchrun")),
        ({"h1": host()}, {"aoe": True, "use_library": True, "launcher": "msrun"}, checks.PER_NODE.format(launcher="msrun")),
        ({"h1": host()}, {"aoe": False, "launcher": "torchrun"}, ""),
        ({"h1": host()}, {"aoe": True, "launcher": "per_device"}, ""),
    ],
    ids=[
        "nothing",
        "tune and use",
        "use only",
        "A3 mode 4, the selected one named",
        "A3 mode 2",
        "A3 training",
        "two A3",
        "same bank",
        "use_library=false",
        "tuning under torchrun",
        "the launcher first",
        "training under torchrun",
        "tuning per device",
    ],
)
def test_aoe_refusal(hostvars, kwargs, expected):
    assert aoe_refusal(list(hostvars), hostvars, **kwargs) == expected


def test_aoe_refusal_names_each_conflicting_environment():
    hostvars = {"h1": host(extra={"TUNE_BANK_PATH": "/other"}), "h2": host(), "h3": host(env={"AOE_MODE": "2"})}
    refusal = aoe_refusal(list(hostvars), hostvars, aoe=True, aoe_mode=4)
    assert refusal.count("Nothing was started.") == 2, refusal
    assert "on h1 sets TUNE_BANK_PATH=/other but the role sets TUNE_BANK_PATH=/bank, AOE_MODE=4" in refusal
    assert "on h3 sets AOE_MODE=2" in refusal and "h2" not in refusal


@pytest.mark.parametrize(
    ("results", "kwargs", "refusal", "tune_bank"),
    [
        ({"h1": pre(clock=clock("h1")), "h2": pre(clock=clock("h2"))}, {}, "", False),
        (  # every refused clock in one sentence, before anything else
            {
                "h1": pre(clock=clock("h1", "refuse")),
                "h2": {"failed": True, "msg": "devices in use"},
                "h3": pre(clock=clock("h3", "refuse")),
            },
            {},
            "launch refused, nothing was started: the clock of h1 is off; the clock of h3 is off",
            False,
        ),
        ({"h1": pre(clock=clock("h1", "warn"))}, {}, "", False),
        ({"h1": pre(bank_files=1), "h2": pre(bank_files=2)}, {}, "", True),
        ({"h1": pre(bank_files=0), "h2": pre(bank_files=0)}, {}, "", False),
        (
            {"h1": pre(bank_files=1), "h2": pre(bank_files=0)},
            {},
            checks.BANK_PARTIAL.format(have="h1 (/bank)", lack="h2 (/bank)"),
            False,
        ),
        (
            {"h1": pre(bank_files=0), "h2": pre(bank_files=0)},
            {"use_library": True},
            checks.BANK_REQUIRED.format(lack="h1 (/bank), h2 (/bank)"),
            False,
        ),
        ({"h1": pre(bank_files=1), "h2": pre(bank_files=0)}, {"use_library": False}, "", False),  # not looked at
        # the pre-flight counts the repository in every run; a tuning run does not judge it
        ({"h1": pre(bank_files=1), "h2": pre(bank_files=0)}, {"aoe": True}, "", False),
        (
            {"h1": {"failed": True, "msg": "devices in use, nothing was started: device 3: ..."}, "h2": pre()},
            {},
            "devices in use, nothing was started: device 3: ...",
            False,
        ),
        ({"h1": {"failed": True, "msg": "A"}, "h2": {"failed": True, "msg": "B"}}, {}, "h1: A; h2: B", False),
        (
            {"h1": pre(npu_smi_version="23.0.rc2"), "h2": pre()},
            {},
            checks.MIXED.format(mixed="the servers run different npu-smi (driver) versions: 23.0.rc2 on h1; 24.1.0 on h2"),
            False,
        ),
        ({"h1": pre(npu_smi_version="23.0.rc2"), "h2": pre()}, {"allow_mixed_versions": True}, "", False),
        ({"h1": pre(), "h2": {"skipped": True, "changed": False}}, {}, "", False),  # no ranks there
    ],
    ids=[
        "all ok",
        "clocks first",
        "a warned clock",
        "bank everywhere",
        "bank nowhere",
        "bank on some",
        "bank required",
        "use_library=false",
        "tuning run",
        "one server refused",
        "two refused",
        "mixed drivers",
        "mixed allowed",
        "skipped",
    ],
)
def test_preflight_verdict(results, kwargs, refusal, tune_bank):
    hostvars = {name: host(_ascend_preflight=result) for name, result in results.items()}
    verdict = preflight_verdict(list(hostvars), hostvars, "_ascend_preflight", **kwargs)
    assert verdict["refusal"] == refusal
    assert verdict["tune_bank"] is tune_bank


def test_preflight_verdict_lists_every_clock_reading_for_the_table():
    hostvars = {"h1": host(_ascend_preflight=pre(clock=clock("h1"))), "h2": host(_ascend_preflight={"skipped": True}), "h3": host()}
    assert preflight_verdict(["h1", "h2", "h3"], hostvars)["clocks"] == [clock("h1")]


@pytest.mark.parametrize(
    ("hosts", "hostvars", "message"),
    [
        ("h1", {"h1": host()}, "hosts must be a list of inventory host names"),
        (["h9"], {"h1": host()}, "'h9' is not in hostvars"),
        (["h1"], {"h1": "not a mapping"}, "hostvars\\['h1'\\] must be a mapping"),
        (["h1"], {"h1": host(_ascend_preflight=["not", "a", "result"])}, "_ascend_preflight of h1 must be a task result"),
    ],
    ids=["hosts a string", "unknown host", "hostvars not a mapping", "result not a mapping"],
)
def test_bad_input_is_refused_naming_it(hosts, hostvars, message):
    with pytest.raises(Exception, match=message):
        preflight_verdict(hosts, hostvars)


def test_aoe_refusal_bad_environment_is_refused():
    with pytest.raises(Exception, match="must be a list of inventory host names"):
        aoe_refusal({"h1": 1}, {"h1": host()})


def test_a_chip_in_warning_or_unknown_is_a_warning_naming_its_server():
    """Issue 25 item 4: the pre-flight's module warned "device 1 (910B3): ..." on a line of its own, naming no server."""
    hostvars = {
        "h1": host(_ascend_preflight=pre(chip_health={"0": "OK", "1": "Warning"}), ansible_facts={"ascend_npu": {"chip_name": "910B3"}}),
        "h2": host(_ascend_preflight=pre(chip_health={"10": "UNKNOWN", "2": "Warning"})),
    }
    assert preflight_verdict(["h1", "h2"], hostvars)["warnings"] == [
        "h1: device 1 (910B3): npu-smi info shows Health Warning; the launch goes on, but check the chip",
        "h2: device 2 (NPU): npu-smi info shows Health Warning; the launch goes on, but check the chip",
        "h2: device 10 (NPU): npu-smi info shows Health UNKNOWN; the launch goes on, but check the chip",
    ]
    # a refused launch does not go on: nothing to warn of
    hostvars["h2"]["_ascend_preflight"]["failed"] = True
    assert preflight_verdict(["h1", "h2"], hostvars)["warnings"] == []


NOT_FOUND = "npu-smi not found on PATH or in /usr/local/sbin, /usr/local/bin, /usr/local/Ascend/driver/tools"
FAILING = "/usr/local/sbin/npu-smi info failed (rc=1): dcmi module initialize failed. ret is -8005"


def unread(problem: str, status: str = "refuse") -> dict:
    """A pre-flight result of a server whose npu-smi could not be read (the module's npu_smi_problem / npu_smi_status)."""
    return {"changed": False, "busy": [], "npu_smi_version": None, "npu_smi_problem": problem, "npu_smi_status": status, "chip_health": {}}


def test_npu_smi_unread_on_a_server_refuses_the_launch_naming_every_such_server_and_what_failed():
    """Issue 26 item 4: npu-smi missing or failing used to warn only (on the server, naming no server), and the launch went on."""
    hostvars = {
        "h1": host(_ascend_preflight=unread(NOT_FOUND)),
        "h2": host(_ascend_preflight=pre()),
        "h3": host(_ascend_preflight=unread(FAILING)),
    }
    verdict = preflight_verdict(list(hostvars), hostvars)
    assert verdict["refusal"] == checks.NPU_SMI_REFUSED.format(servers="h1, h3", problems=f"h1: {NOT_FOUND}; h3: {FAILING}")
    assert verdict["refusal"].startswith(
        "launch refused, nothing was started: npu-smi could not be read on h1, h3 - h1: npu-smi not found on PATH or in "
    )
    assert verdict["refusal"].endswith("or launch without these checks with ascend_launch_allow_unknown_health=true")
    assert verdict["warnings"] == []
    # a refused clock still comes first: that server checked nothing
    hostvars["h2"]["_ascend_preflight"] = pre(clock=clock("h2", "refuse"))
    assert preflight_verdict(list(hostvars), hostvars)["refusal"] == checks.REFUSED + "the clock of h2 is off"


def test_npu_smi_unread_but_allowed_warns_naming_the_server_and_an_unknown_version_still_counts_as_mixed():
    allowed = unread(NOT_FOUND, "allowed")
    one = {"h1": host(_ascend_preflight=allowed)}
    verdict = preflight_verdict(["h1"], one)
    assert verdict["refusal"] == ""  # one server: no version to differ from
    assert verdict["warnings"] == [
        f"h1: {NOT_FOUND}: the health of its chips and the processes holding its devices were not checked "
        "(ascend_launch_allow_unknown_health=true); the launch goes on"
    ]
    two = {"h1": host(_ascend_preflight=allowed), "h2": host(_ascend_preflight=pre())}
    refusal = preflight_verdict(["h1", "h2"], two)["refusal"]
    assert refusal == (
        "launch refused, nothing was started: the servers run different npu-smi (driver) versions: 24.1.0 on h2; unknown on h1. "
        "Ranks on different drivers fail in HCCL or train differently: install one driver everywhere, or allow it with "
        "ascend_launch_allow_mixed_versions=true (an unknown version counts as a different one: npu-smi info printed none on h1; "
        "check npu-smi and the driver there)"
    )
    assert preflight_verdict(["h1", "h2"], two, allow_mixed_versions=True)["warnings"] == verdict["warnings"]


def test_a_driver_version_npu_smi_did_not_print_is_refused_as_mixed():
    """Issue 26 item 4: an unknown driver version was left out of the comparison, so a broken driver passed."""
    hostvars = {"h1": host(_ascend_preflight=pre()), "h2": host(_ascend_preflight=pre(npu_smi_version=None))}
    refusal = preflight_verdict(["h1", "h2"], hostvars)["refusal"]
    assert refusal.startswith(
        "launch refused, nothing was started: the servers run different npu-smi (driver) versions: 24.1.0 on h1; unknown on h2."
    )
    assert "npu-smi info printed none on h2" in refusal


def test_a_warning_chip_is_warned_with_the_error_code_its_chip_reports():
    """Issue 33 item 5: the chip's own error code and information (npu-smi info -t health) go with the word."""
    code = "Error Code A4025021 (ascend_monitor adda heart beat lost error)"
    hostvars = {"h1": host(_ascend_preflight=pre(chip_health={"1": "Warning"}, chip_errors={"1": code}))}
    assert preflight_verdict(["h1"], hostvars)["warnings"] == [
        "h1: device 1 (NPU): npu-smi info shows Health Warning; the launch goes on, but check the chip (%s)" % code
    ]


UNFIT = (
    "the driver and the CANN toolkit do not list each other: the driver's 'compatible_version=[V100R001C29],[V100R001C30],"
    "[V100R001C13],[V100R001C15]' (/usr/local/Ascend/driver/version.info) does not name the toolkit's "
    "'innerversion=V100R001C21SPC001B229', and the toolkit's ... does not name the driver's ..."
)


def test_a_server_whose_driver_firmware_and_cann_do_not_fit_is_refused_naming_it_unless_allowed():
    """Issue 33 item 5: besides comparing servers, the gate checks that one server's packages work together."""
    fit = {"problems": [UNFIT], "unknown": []}
    hostvars = {
        "h1": host(_ascend_preflight=pre(version_fit=fit)),
        "h2": host(_ascend_preflight=pre(version_fit={"problems": [], "unknown": []})),
    }
    verdict = preflight_verdict(["h1", "h2"], hostvars)
    assert verdict["refusal"] == checks.REFUSED + checks.UNFIT.format(problems="h1: " + UNFIT)
    assert "ascend_launch_allow_mixed_versions=true" in verdict["refusal"]
    assert preflight_verdict(["h1", "h2"], hostvars, allow_mixed_versions=True)["refusal"] == ""


def test_a_fit_that_could_not_be_checked_is_one_warning_per_reason_naming_its_servers():
    fit = {"problems": [], "unknown": ["the firmware's version.info was not found"]}
    other = {"problems": [], "unknown": ["the driver's version.info was not found"]}
    hostvars = {
        "h1": host(_ascend_preflight=pre(version_fit=fit)),
        "h2": host(_ascend_preflight=pre(version_fit=other)),
        "h3": host(_ascend_preflight=pre(version_fit=fit)),
    }
    verdict = preflight_verdict(["h1", "h2", "h3"], hostvars)
    assert verdict["refusal"] == ""
    assert verdict["warnings"] == [
        "whether the driver, firmware and CANN of a server work together was not fully checked on h1, h3: the firmware's version.info was not found",
        "whether the driver, firmware and CANN of a server work together was not fully checked on h2: the driver's version.info was not found",
    ]
