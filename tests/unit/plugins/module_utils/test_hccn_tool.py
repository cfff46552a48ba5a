"""HccnTool: argument lists, the exit-code table, typed getters."""

from __future__ import annotations

import pytest

from ansible_collections.ascend.cluster.plugins.module_utils import _command
from ansible_collections.ascend.cluster.plugins.module_utils._hccn import tool as t
from ansible_collections.ascend.cluster.plugins.module_utils._hccn.parse import ParseError
from tests.unit.plugins.module_utils.hccn_fakes import EXEC_FAILED, HCCN, INVALID_DEVICE, NO_GATEWAY, NO_IP, FakeModule


def tool(transcript, **kwargs):
    module = FakeModule(transcript=transcript)
    return t.HccnTool(module, HCCN, runner=module.run_tool, **kwargs)


# (command, rc, stdout, stderr) -> expected outcome kind (None = data)
CLASSIFY_CASES = [
    (0, "ipaddr:1.2.3.4\n", "", None),
    (2, "", "Get gateway failed, because no gateway was preset there!\n", t.UNSET),
    (1, "", "Get ipconf failed, because no ip was preset there!\n", t.UNSET),
    (4, "", "Get invalid device id.\n", t.DEVICE),
    (1, "", "Command execute failed!\n", t.DEVICE),
    (3, "", "Get unknown option!\nusage: hccn_tool ...\n", t.USAGE),
    (4, "", "The total count of input parameters is wrong!\n", t.USAGE),
    (124, "", "", t.DEVICE),
    (127, "", "", t.MISSING),
    (9, "", "something new\n", t.DEVICE),
]


@pytest.mark.parametrize("rc,out,err,kind", CLASSIFY_CASES)
def test_classify(rc, out, err, kind):
    outcome = t.classify(t.HccnResult([HCCN, "-i", "0"], rc, out, err))
    assert (outcome.kind if outcome else None) == kind
    if outcome is not None and err:
        assert outcome.stderr == err.strip()


def test_command_is_an_argument_list():
    client = tool({})
    assert client.command(3, ["-ip", "-g"]) == [HCCN, "-i", "3", "-ip", "-g"]
    assert client.command(None, ["-cfg", "recovery"]) == [HCCN, "-a", "-cfg", "recovery"]


def test_run_passes_the_timeout_and_never_raises():
    module = FakeModule(transcript={(HCCN, "-i", "0", "-link", "-g"): (0, "link status: UP\n", "")})
    seen = []

    def spy(argv, timeout=None):
        seen.append((list(argv), timeout))
        return module.run_tool(argv, timeout)

    result = t.HccnTool(module, HCCN, timeout=7, runner=spy).run(0, ["-link", "-g"])
    assert result.rc == 0 and result.stdout == "link status: UP\n"
    assert seen == [([HCCN, "-i", "0", "-link", "-g"], 7)]
    assert result.cmd == [HCCN, "-i", "0", "-link", "-g"]


def test_default_runner_is_the_real_one():
    assert t.HccnTool(FakeModule(), HCCN).runner is _command.run


def test_run_turns_oserror_into_rc_127():
    module = FakeModule()

    def boom(argv, timeout=None):
        raise OSError(2, "No such file or directory")

    result = t.HccnTool(module, HCCN, runner=boom).run(0, ["-ip", "-g"])
    assert result.rc == 127 and "No such file" in result.stderr
    error = t.classify(result)
    assert error is not None and error.kind == t.MISSING


def test_getters_map_unset_states_to_empty_values():
    base = (HCCN, "-i", "5")
    client = tool(
        {
            base + ("-ip", "-g"): NO_IP,
            base + ("-gateway", "-g"): NO_GATEWAY,
            base + ("-netdetect", "-g"): (0, "netdetect address: 0.0.0.0\n", ""),
        }
    )
    assert client.get_ip(5) == {"address": "", "netmask": "", "ips": []}
    assert client.get_gateway(5) == ""
    assert client.get_netdetect(5) == ""


def test_getters_return_typed_values():
    base = (HCCN, "-i", "1")
    client = tool(
        {
            base + ("-ip", "-g"): (0, "ipaddr:192.168.101.101\nnetmask:255.255.255.0\n", ""),
            base + ("-gateway", "-g"): (0, "default gateway:192.168.101.1, Iface:eth1\n", ""),
            base + ("-net_health", "-g"): (0, "net health status: Receive timeout\n", ""),
            base + ("-link", "-g"): (0, "link status: DOWN\n", ""),
            base + ("-mac", "-g"): (0, "mac addr: AA:BB:CC:DD:EE:01\n", ""),
            base + ("-tls", "-g"): (
                0,
                "dev_id:1, tls switch[1](0:disable, 1:enable), tls preconfigured[1](0:non-preset, "
                "1:preset), tls alarm time threshold[60]days\n",
                "",
            ),
        }
    )
    assert client.get_ip(1)["address"] == "192.168.101.101"
    assert client.get_gateway(1) == "192.168.101.1"
    assert client.get_net_health(1) == "Receive timeout"
    assert client.get_link(1) == "DOWN"
    assert client.get_mac(1) == "aa:bb:cc:dd:ee:01"
    assert client.get_tls(1) == {"tls_switch": True, "tls_preconfigured": True, "tls_alarm_days": 60}


@pytest.mark.parametrize("answer,kind", [(INVALID_DEVICE, t.DEVICE), (EXEC_FAILED, t.DEVICE)])
def test_device_errors_raise_with_raw_stderr(answer, kind):
    client = tool({(HCCN, "-i", "9", "-link", "-g"): answer})
    with pytest.raises(t.HccnError) as info:
        client.get_link(9)
    assert info.value.kind == kind
    assert info.value.stderr == answer[2].strip()


def test_garbage_raises_parse_error_with_raw():
    client = tool({(HCCN, "-i", "0", "-link", "-g"): (0, "link status: ???\n", "")})
    with pytest.raises(ParseError) as info:
        client.get_link(0)
    assert info.value.raw == "link status: ???\n"


def test_find_binary(tmp_path):
    exe = tmp_path / "hccn_tool"
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    plain = tmp_path / "plain"
    plain.write_text("")
    module = FakeModule(bins={"hccn_tool": "/on/path/hccn_tool"})
    assert t.find_binary(module) == "/on/path/hccn_tool"
    assert t.find_binary(module, str(exe)) == str(exe)
    assert t.find_binary(module, str(plain)) is None
    assert t.find_binary(module, str(tmp_path / "missing")) is None
    assert t.find_binary(FakeModule(bins={})) is None


def test_pool_map_keeps_order_and_returns_tool_errors():
    def work(item):
        if item == 2:
            raise t.HccnError(t.DEVICE, t.HccnResult([HCCN], 1, "", "Command execute failed!\n"), "failed")
        if item == 3:
            raise ParseError("link status", "junk")
        return item * 10

    out = t.pool_map(work, [0, 1, 2, 3, 4], parallel=2)
    assert out[:2] == [0, 10] and out[4] == 40
    assert isinstance(out[2], t.HccnError) and isinstance(out[3], ParseError)
    assert t.pool_map(work, [], parallel=4) == []


def test_pool_map_lets_bugs_through():
    with pytest.raises(ZeroDivisionError):
        t.pool_map(lambda item: 1 // 0, [1], parallel=1)


def flaky(module, empty_answers):
    """A client whose first ``empty_answers`` calls come back with nothing at all (rc 0), and its calls."""
    calls = []

    def run_tool(argv, timeout=None):
        calls.append(argv)
        if len(calls) <= empty_answers:
            return 0, "", ""
        return module.run_tool(argv, timeout)

    return t.HccnTool(module, HCCN, runner=run_tool), calls


def test_get_asks_again_when_the_answer_was_lost():
    module = FakeModule(transcript={(HCCN, "-i", "0", "-link", "-g"): (0, "link status: UP\n", "")})
    client, calls = flaky(module, 2)
    assert client.get_link(0) == "UP"
    assert len(calls) == 3


def test_get_gives_up_after_the_attempts_with_the_raw_text():
    module = FakeModule(transcript={(HCCN, "-i", "0", "-link", "-g"): (0, "link status: UP\n", "")})
    client, calls = flaky(module, t.GET_ATTEMPTS)
    with pytest.raises(ParseError) as info:
        client.get_link(0)
    assert info.value.raw == "" and len(calls) == t.GET_ATTEMPTS


def test_get_does_not_repeat_real_answers():
    module = FakeModule(transcript={(HCCN, "-i", "0", "-gateway", "-g"): NO_GATEWAY})
    client, calls = flaky(module, 0)
    assert client.get_gateway(0) == ""
    assert len(calls) == 1
