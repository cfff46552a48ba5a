"""hccn_facts logic (Gatherer) against transcripts of hccn_tool / npu-smi, through a fake runner."""

from __future__ import annotations

import os
import time

import pytest

from ansible_collections.ascend.cluster.plugins.module_utils._hccn.facts import FactsError, Gatherer
from tests.unit.plugins.module_utils.hccn_fakes import (
    EXEC_FAILED,
    HCCN,
    INFO_TABLE_910B,
    INVALID_DEVICE,
    NPU_SMI,
    FakeModule,
    device_answers,
    failing_device,
    info_list,
)

CONFIGURED = dict(ip="192.168.100.101", gateway="192.168.100.1", netdetect="192.168.100.1")


def gather(params=None, transcript=None, bins=None, delay=0.0):
    module = FakeModule(params=params, transcript=transcript, bins=bins, delay=delay)
    return Gatherer(module, runner=module.run_tool).gather(), module


def npu_smi_transcript(npus, table=INFO_TABLE_910B, chips=1):
    return {(NPU_SMI, "info", "-l"): (0, info_list(npus, chips), ""), (NPU_SMI, "info"): (0, table, "")}


def write_conf(tmp_path, text):
    path = tmp_path / "hccn.conf"
    path.write_text(text)
    return str(path)


def test_fresh_and_configured_devices(tmp_path):
    transcript = npu_smi_transcript([0, 1])
    transcript.update(device_answers(0))  # fresh: nothing set
    transcript.update(device_answers(1, **dict(CONFIGURED, ip="192.168.101.101", gateway="192.168.101.1")))
    conf = write_conf(tmp_path, "address_1=192.168.101.101\nnetmask_1=255.255.255.0\ngateway_1=192.168.101.1\nnetdetect_1=192.168.100.1\n")
    facts, module = gather({"hccn_conf": conf}, transcript, {"hccn_tool": HCCN, "npu-smi": NPU_SMI})
    assert facts["source"] == "hccn_tool" and facts["chip"] == "910B" and facts["chip_name"] == "910B3"
    assert facts["device_count"] == 2 and facts["device_list_source"] == "npu-smi"
    fresh, configured = facts["devices"]
    assert fresh == {
        "device_id": 0,
        "device_ip": "",
        "netmask": "",
        "ips": [],
        "gateway": "",
        "netdetect": "",
        "net_health": "Init",
        "link": "UP",
        "error": None,
        "unparsed": {},
        "conf": {},
        "stale_conf": False,
        "stale_keys": [],
    }
    assert configured["device_ip"] == "192.168.101.101" and configured["gateway"] == "192.168.101.1"
    assert configured["net_health"] == "Success" and configured["stale_conf"] is False
    assert configured["conf"]["address"] == "192.168.101.101"
    assert facts["warnings"] == []
    assert module.check_mode is False


def test_link_down_and_health_with_spaces():
    transcript = device_answers(3, link="DOWN", health="Receive timeout", **CONFIGURED)
    facts, dummy = gather({"devices": [3]}, transcript)
    dev = facts["devices"][0]
    assert (dev["link"], dev["net_health"], dev["error"]) == ("DOWN", "Receive timeout", None)
    assert facts["device_list_source"] == "devices option"
    assert facts["chip"] is None  # no npu-smi: unknown chip


@pytest.mark.parametrize("answer", [INVALID_DEVICE, EXEC_FAILED])
def test_device_error_is_reported_per_device(answer):
    transcript = device_answers(0, **CONFIGURED)
    transcript.update(failing_device(1, answer))
    facts, dummy = gather({"devices": [0, 1]}, transcript)
    ok, bad = facts["devices"]
    assert ok["error"] is None and ok["device_ip"] == "192.168.100.101"
    assert bad["error"] == answer[2].strip()
    assert bad["device_ip"] is None and bad["link"] is None and bad["stale_conf"] is False


def test_one_failing_query_keeps_the_others():
    transcript = device_answers(2, **CONFIGURED)
    transcript[(HCCN, "-i", "2", "-net_health", "-g")] = EXEC_FAILED
    facts, dummy = gather({"devices": [2]}, transcript)
    dev = facts["devices"][0]
    assert dev["error"] == "Command execute failed!" and dev["net_health"] is None and dev["link"] == "UP"


def test_stale_conf_detected(tmp_path):
    conf = write_conf(tmp_path, "address_0=192.168.100.5\nnetmask_0=255.255.255.0\naddress_0=192.168.100.7\n")
    facts, dummy = gather({"devices": [0], "hccn_conf": conf}, device_answers(0, **CONFIGURED))
    dev = facts["devices"][0]
    assert dev["stale_conf"] is True
    assert dev["stale_keys"] == ["address", "gateway", "netdetect"]
    assert dev["device_ip"] == "192.168.100.101"  # the device wins


def test_missing_conf_skips_cross_check_with_warning():
    facts, dummy = gather({"devices": [0]}, device_answers(0, **CONFIGURED))
    assert facts["devices"][0]["stale_conf"] is False
    assert any("cross-check skipped" in w for w in facts["warnings"])


def test_conf_fallback_when_hccn_tool_missing(tmp_path):
    conf = write_conf(
        tmp_path,
        "address_1=10.0.0.2\nnetmask_1=255.255.255.0\nnetdetect_1=0.0.0.0\n"
        "address_0=10.0.0.1\nnetmask_0=255.255.255.0\ngateway_0=10.0.0.254\n",
    )
    facts, module = gather({"hccn_conf": conf}, {}, bins={})
    assert facts["source"] == "hccn_conf" and facts["hccn_tool"] is None
    assert facts["device_list_source"] == "hccn.conf"
    assert [d["device_id"] for d in facts["devices"]] == [0, 1]
    dev0, dev1 = facts["devices"]
    assert (dev0["device_ip"], dev0["gateway"], dev0["link"], dev0["net_health"]) == ("10.0.0.1", "10.0.0.254", None, None)
    assert dev1["netdetect"] == ""
    assert any("hccn_tool not found" in w for w in facts["warnings"])
    assert module.calls == []


def test_conf_fallback_uses_davinci_nodes_for_the_list(tmp_path):
    conf = write_conf(tmp_path, "address_0=10.0.0.1\naddress_5=10.0.0.6\n")
    devdir = tmp_path / "dev"
    devdir.mkdir()
    for name in ("davinci0", "davinci1", "davinci_manager"):
        (devdir / name).write_text("")
    facts, dummy = gather({"hccn_conf": conf, "dev_dir": str(devdir)}, {}, bins={})
    assert facts["device_list_source"] == "/dev/davinci"
    assert [(d["device_id"], d["device_ip"]) for d in facts["devices"]] == [(0, "10.0.0.1"), (1, "")]


def test_nothing_installed_fails_with_what_to_install():
    with pytest.raises(FactsError) as info:
        gather({}, {}, bins={})
    assert "install the Ascend NPU driver" in info.value.msg and "hccn_conf" in info.value.msg


def test_no_devices_found_fails():
    with pytest.raises(FactsError) as info:
        gather({}, {})
    assert "no NPU found" in info.value.msg and "devices option" in info.value.msg


def test_an_unreadable_answer_leaves_that_field_unknown_with_the_raw_answer_not_the_host_failed():
    transcript = device_answers(0, **CONFIGURED)
    transcript.update(device_answers(1, **dict(CONFIGURED, ip="192.168.101.101")))
    transcript[(HCCN, "-i", "0", "-link", "-g")] = (0, "link status: ???\n", "")
    # MindCluster's log-collection guide prints `-ip -g` with a masked address (docs/en/faultdiag/user_guide/03_collecting_logs.md)
    transcript[(HCCN, "-i", "1", "-ip", "-g")] = (0, "ipaddr:10.xx.xx.10\nnetmask:255.255.255.0\n", "")
    facts, dummy = gather({"devices": [0, 1]}, transcript)
    dev0, dev1 = facts["devices"]
    assert (dev0["link"], dev0["unparsed"], dev0["error"], dev0["device_ip"]) == (
        None,
        {"link": "link status: ???"},
        None,
        "192.168.100.101",
    )
    assert (dev1["device_ip"], dev1["netmask"], dev1["ips"], dev1["link"]) == (None, None, None, "UP")
    assert dev1["unparsed"] == {"ip": "ipaddr:10.xx.xx.10 / netmask:255.255.255.0"}
    assert dev1["stale_conf"] is False  # an unknown value is not compared with hccn.conf
    [warn0, warn1] = [w for w in facts["warnings"] if "cannot read" in w]
    assert warn0.startswith("device 0: `%s -i 0 -link -g` printed 'link status: ???'" % HCCN) and "link unknown (null)" in warn0
    assert "device 1: `%s -i 1 -ip -g` printed 'ipaddr:10.xx.xx.10 / netmask:255.255.255.0'" % HCCN in warn1
    assert "device_ip, netmask, ips unknown" in warn1


def test_an_unreadable_tls_answer_leaves_every_tls_field_unknown():
    transcript = device_answers(0, **CONFIGURED)
    transcript[(HCCN, "-i", "0", "-tls", "-g")] = (0, "tls status: enabled\n", "")
    facts, dummy = gather({"devices": [0], "gather": ["tls"]}, transcript)
    dev = facts["devices"][0]
    assert (dev["tls_switch"], dev["tls_preconfigured"], dev["tls_alarm_days"]) == (None, None, None)
    assert dev["unparsed"] == {"tls": "tls status: enabled"} and dev["net_health"] == "Success"


def test_old_driver_without_tls_fails_with_hint():
    facts, dummy = gather({"devices": [0]}, device_answers(0))
    assert "tls_switch" not in facts["devices"][0]
    with pytest.raises(FactsError) as info:
        gather({"devices": [0], "gather": ["tls"]}, device_answers(0))
    assert "drop 'tls' from the gather option" in info.value.msg
    assert info.value.details["rc"] == 3


def test_gather_tls_and_mac():
    transcript = device_answers(0, **CONFIGURED)
    transcript[(HCCN, "-i", "0", "-tls", "-g")] = (
        0,
        "dev_id:0, tls switch[0](0:disable, 1:enable), tls preconfigured[1](0:non-preset, 1:preset), tls alarm time threshold[60]days\n",
        "",
    )
    transcript[(HCCN, "-i", "0", "-mac", "-g")] = (0, "mac addr: 78:b4:6a:00:00:00\n", "")
    facts, dummy = gather({"devices": [0], "gather": ["tls", "mac"]}, transcript)
    dev = facts["devices"][0]
    assert (dev["tls_switch"], dev["tls_preconfigured"], dev["tls_alarm_days"], dev["mac"]) == (False, True, 60, "78:b4:6a:00:00:00")


def test_tls_without_a_preconfigured_field_is_read_not_failed():
    # The form of the HCCL documentation's TLS-inconsistency page (hcclug_000045): no `tls preconfigured[...]`.
    transcript = device_answers(0, **CONFIGURED)
    transcript[(HCCN, "-i", "0", "-tls", "-g")] = (
        0,
        "dev_id:0, tls switch[1](0:disable, 1:enable), tls alarm time threshold[60]days\n",
        "",
    )
    facts, dummy = gather({"devices": [0], "gather": ["tls"]}, transcript)
    dev = facts["devices"][0]
    assert (dev["tls_switch"], dev["tls_preconfigured"], dev["tls_alarm_days"], dev["error"]) == (True, None, 60, None)


def test_a3_chip_count_expands_devices():
    transcript = npu_smi_transcript(range(8), table=INFO_TABLE_910B, chips=2)
    for dev in range(16):
        transcript.update(device_answers(dev))
    facts, module = gather({}, transcript, {"hccn_tool": HCCN, "npu-smi": NPU_SMI})
    assert [d["device_id"] for d in facts["devices"]] == list(range(16))
    assert len([c for c in module.calls if c[0] == HCCN]) == 16 * 5


def test_npu_smi_failure_falls_back_to_davinci(tmp_path):
    devdir = tmp_path / "dev"
    devdir.mkdir()
    (devdir / "davinci4").write_text("")
    transcript = {
        (NPU_SMI, "info", "-l"): (1, "", "dcmi module initialize failed\n"),
        (NPU_SMI, "info"): (1, "", "dcmi module initialize failed\n"),
    }
    transcript.update(device_answers(4))
    facts, dummy = gather({"dev_dir": str(devdir)}, transcript, {"hccn_tool": HCCN, "npu-smi": NPU_SMI})
    assert facts["device_list_source"] == "/dev/davinci" and [d["device_id"] for d in facts["devices"]] == [4]
    assert any("dcmi module initialize failed" in w for w in facts["warnings"])


def test_unparseable_npu_smi_list_fails_with_raw():
    transcript = {(NPU_SMI, "info", "-l"): (0, "garbage\n", ""), (NPU_SMI, "info"): (0, INFO_TABLE_910B, "")}
    with pytest.raises(FactsError) as info:
        gather({}, transcript, {"hccn_tool": HCCN, "npu-smi": NPU_SMI})
    assert "garbage" in info.value.msg


@pytest.mark.parametrize(
    "params,needle",
    [
        ({"parallel": 0}, "parallel must be 1 or more"),
        ({"timeout": 0}, "timeout must be 1 second or more"),
        ({"devices": [0, 16]}, "devices [16] out of range"),
        ({"devices": [-1]}, "out of range"),
        ({"devices": [1, 1]}, "more than once"),
        ({"hccn_tool": "/nonexistent/hccn_tool"}, "hccn_tool=/nonexistent/hccn_tool is not an executable file"),
        ({"npu_smi": "/nonexistent/npu-smi"}, "npu_smi=/nonexistent/npu-smi is not an executable file"),
    ],
)
def test_bad_option_values(params, needle):
    with pytest.raises(FactsError) as info:
        gather(params, {})
    assert needle in info.value.msg


def test_calls_run_concurrently_and_bounded():
    transcript = {}
    for dev in range(8):
        transcript.update(device_answers(dev))
    start = time.monotonic()
    dummy, module = gather({"devices": list(range(8)), "parallel": 10}, transcript, delay=0.05)
    elapsed = time.monotonic() - start
    assert module.max_active == 10
    assert elapsed < 40 * 0.05 / 2  # 40 calls at 50 ms: sequential would take 2 s
    dummy, module = gather({"devices": [0, 1], "parallel": 1}, transcript)
    assert module.max_active == 1


TIMED_OUT = (124, "", "")  # what _command.run returns for a call it had to stop


def test_every_device_timing_out_is_warned_not_passed_silently():
    transcript = {}
    for dev in (0, 1):
        transcript.update(failing_device(dev, TIMED_OUT))
    facts, dummy = gather({"devices": [0, 1]}, transcript)
    assert all(d["error"].startswith("no answer within the timeout") for d in facts["devices"])
    warning = next(w for w in facts["warnings"] if w.startswith("no device answered"))
    assert "2 of 2 failed: device 0: no answer within the timeout" in warning
    assert "raise the timeout option" in warning


def test_some_devices_failing_are_named_in_one_warning():
    transcript = device_answers(0, **CONFIGURED)
    for dev in range(1, 7):
        transcript.update(failing_device(dev, EXEC_FAILED))
    facts, dummy = gather({"devices": list(range(7))}, transcript)
    warning = next(w for w in facts["warnings"] if "did not answer" in w)
    assert warning.startswith("6 of 7 devices did not answer every hccn_tool query")
    assert "device 1: Command execute failed!" in warning and "(and 2 more)" in warning


def test_healthy_devices_give_no_device_warning():
    facts, dummy = gather({"devices": [0]}, device_answers(0, **CONFIGURED))
    assert not any("did not answer" in w or "no device answered" in w for w in facts["warnings"])


BOARD = """        NPU ID                         : {npu}
        Product Name                   : IT22DMDB02
        Model                          : NA
        Manufacturer                   : Huawei
        Serial Number                  : 025VLB10K7000275
        Software Version               : 23.0.0
        Firmware Version               : {firmware}
        Board ID                       : 0x45
        PCB ID                         : B
        BOM ID                         : 1
        Chip Count                     : 1
        Faulty Chip Count              : 0
"""


def test_the_facts_show_the_driver_firmware_and_cann_versions(tmp_path):
    """Issue 26 item 5: the versions every server of a job must share, in the facts."""
    transcript = npu_smi_transcript([0, 1])
    transcript.update(device_answers(0))
    transcript.update(device_answers(1))
    for npu in (0, 1):
        transcript[(NPU_SMI, "info", "-t", "board", "-i", str(npu))] = (0, BOARD.format(npu=npu, firmware="7.1.0.4.218"), "")
    cann = tmp_path / "Ascend"
    info = cann / "ascend-toolkit" / "latest" / ("%s-linux" % os.uname()[4]) / "ascend_toolkit_install.info"
    info.parent.mkdir(parents=True)
    info.write_text("package_name=Ascend-cann-toolkit\nversion=8.3.RC2\narch=x\nos=linux\n")
    bins = {"hccn_tool": HCCN, "npu-smi": NPU_SMI}
    facts, module = gather({"cann_dir": str(cann)}, transcript, bins)
    assert (facts["driver_version"], facts["firmware_version"]) == ("23.0.0", "7.1.0.4.218")
    assert (facts["cann_toolkit_version"], facts["cann_kernels_version"]) == ("8.3.RC2", "not installed")
    assert sorted(c for c in module.calls if "board" in c) == [
        (NPU_SMI, "info", "-t", "board", "-i", "0"),
        (NPU_SMI, "info", "-t", "board", "-i", "1"),
    ]
    # NA on one board (a non-root user on some boards): unknown
    transcript[(NPU_SMI, "info", "-t", "board", "-i", "1")] = (0, BOARD.format(npu=1, firmware="NA"), "")
    facts, dummy = gather({"cann_dir": str(cann)}, transcript, bins)
    assert facts["firmware_version"] is None
    # without npu-smi: nothing read from it
    facts, dummy = gather({"cann_dir": str(tmp_path / "elsewhere"), "devices": [0]}, device_answers(0))
    assert (facts["driver_version"], facts["firmware_version"], facts["cann_toolkit_version"]) == (None, None, None)
