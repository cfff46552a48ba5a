"""hccn_config logic (Configurator) against a fake hccn_tool that keeps per-device state.

Each case starts from the devices' state, runs the module logic, and checks the exact hccn_tool
calls made (the transcript), the result and the devices' final state.
"""

from __future__ import annotations

import pytest

from ansible_collections.ascend.cluster.plugins.module_utils._hccn.config import ConfigError, Configurator, ip_waves
from ansible_collections.ascend.cluster.plugins.module_utils._hccn.tool import HccnTool
from tests.unit.plugins.module_utils.hccn_fakes import EXEC_FAILED, HCCN, FakeModule

MASK = "255.255.255.0"
OK = (0, "Cmd executed successfully!\n", "")
CONFLICT = (7, "", "The ip address configured is conflicted!\n")


class FakeDevices(FakeModule):
    """A FakeModule whose run_tool answers like hccn_tool from a per-device state dict.

    ``ignore_sets`` lists (device, option) sets that answer success but change nothing (for the
    read-back check); ``answers`` overrides the answer of one exact argv.
    """

    def __init__(self, state, params=None, ignore_sets=(), answers=None):
        super().__init__(params=params)
        self.state = {d: dict(dict.fromkeys(("address", "netmask", "gateway", "netdetect"), ""), **v) for d, v in state.items()}
        self.ignore_sets = set(ignore_sets)
        self.answers = dict(answers or {})

    def sets(self):
        return [" ".join(c[1:]) for c in self.calls if "-s" in c]

    def run_tool(self, argv, timeout=None):
        assert isinstance(argv, list)
        with self._lock:
            self.calls.append(tuple(argv))
        if tuple(argv) in self.answers:
            return self.answers[tuple(argv)]
        assert argv[0] == HCCN and argv[1] == "-i"
        device, option, mode, rest = int(argv[2]), argv[3], argv[4], argv[5:]
        dev = self.state[device]
        if mode == "-g":
            if option == "-ip":
                return (
                    (0, "ipaddr:%s\nnetmask:%s\n" % (dev["address"], dev["netmask"]), "")
                    if dev["address"]
                    else (13, "", "Get ipconf failed, because no ip was preset there!\n")
                )
            if option == "-gateway":
                if not dev["gateway"]:
                    return 2, "", "Get gateway failed, because no gateway was preset there!\n"
                return 0, "default gateway:%s, Iface:eth%d\n" % (dev["gateway"], device), ""
            if option == "-netdetect":
                return 0, "netdetect addr: %s\n" % (dev["netdetect"] or "0.0.0.0"), ""
        if (device, option) in self.ignore_sets:
            return OK
        with self._lock:
            if option == "-ip":
                if any(d != device and other["address"] == rest[1] for d, other in self.state.items()):
                    return CONFLICT
                dev.update(address=rest[1], netmask=rest[3])
            elif option == "-gateway":
                dev["gateway"] = rest[1]
            elif option == "-netdetect":
                dev["netdetect"] = rest[1]
        return OK


def configure(devices, state, check_mode=False, **kwargs):
    module = FakeDevices(state, params={"devices": devices, "parallel": 4, "timeout": 30}, **kwargs)
    module.check_mode = check_mode
    tool = HccnTool(module, HCCN, runner=module.run_tool)
    return Configurator(module, tool).run(), module


def want(device, address, gateway="", netdetect="", netmask=MASK):
    return {"device_id": device, "address": address, "netmask": netmask, "gateway": gateway, "netdetect": netdetect}


def seed_server0():
    """Seed 004, AI Server0: devices 0-3 = 192.168.100-103.101, 4-7 = 192.168.100-103.100."""
    return [want(d, "192.168.%d.%d" % (100 + d % 4, 101 if d < 4 else 100)) for d in range(8)]


def as_state(devices):
    return {w["device_id"]: {k: w[k] for k in ("address", "netmask", "gateway", "netdetect")} for w in devices}


def test_fresh_devices_get_the_seed_plan():
    result, module = configure(seed_server0(), {d: {} for d in range(8)})
    assert result["changed"] is True
    # the 8 sets are one concurrent batch (parallel=4): their order is the threads', not a contract
    assert sorted(module.sets()) == [
        "-i %d -ip -s address 192.168.%d.%d netmask 255.255.255.0" % (d, 100 + d % 4, 101 if d < 4 else 100) for d in range(8)
    ]
    assert module.state[3]["address"] == "192.168.103.101" and module.state[7]["address"] == "192.168.103.100"
    assert [d["changes"] for d in result["devices"]] == [["ip"]] * 8
    assert result["devices"][0]["after"] == {"address": "192.168.100.101", "netmask": MASK}
    # gateway and netdetect are not managed here: never read, never set
    assert not [c for c in module.calls if "-gateway" in c or "-netdetect" in c]


def test_second_run_is_a_no_op_with_reads_only():
    plan = [want(d, "198.18.%d.10" % d, gateway="198.18.%d.1" % d, netdetect="198.18.%d.1" % d) for d in range(4)]
    result, module = configure(plan, as_state(plan))
    assert result["changed"] is False
    assert module.sets() == []
    assert len(module.calls) == 4 * 3  # ip, gateway, netdetect per device; no read-back
    assert all(not d["changed"] and d["commands"] == [] for d in result["devices"])
    assert result["diff"][0]["before"] == result["diff"][0]["after"] and len(result["diff"]) == 1


def test_partial_change_sets_only_what_differs():
    plan = [want(d, "198.18.0.%d" % (10 + d), gateway="198.18.0.1", netdetect="198.18.0.1") for d in range(3)]
    state = as_state(plan)
    state[1]["netdetect"] = ""  # only netdetect missing
    state[2]["address"] = "198.18.0.99"  # address differs: gateway is set again after it
    result, module = configure(plan, state)
    assert module.sets() == [
        "-i 2 -ip -s address 198.18.0.12 netmask 255.255.255.0",
        "-i 2 -gateway -s gateway 198.18.0.1",
        "-i 1 -netdetect -s address 198.18.0.1",
    ]
    assert [d["changes"] for d in result["devices"]] == [[], ["netdetect"], ["ip", "gateway"]]
    assert result["diff"][0]["before"]["device 2"]["address"] == "198.18.0.99"
    assert result["diff"][0]["after"]["device 2"]["address"] == "198.18.0.12"
    assert module.state[2]["address"] == "198.18.0.12"


def test_netmask_given_as_prefix_length_matches_the_dotted_one():
    plan = [want(0, "198.18.0.10", netmask="24")]
    result, module = configure(plan, {0: {"address": "198.18.0.10", "netmask": MASK}})
    assert result["changed"] is False and module.sets() == []


def test_empty_gateway_and_netdetect_leave_the_device_values():
    state = {0: {"address": "198.18.0.10", "netmask": MASK, "gateway": "198.18.0.254", "netdetect": "198.18.0.254"}}
    result, module = configure([want(0, "198.18.0.10")], state)
    assert result["changed"] is False and module.calls == [(HCCN, "-i", "0", "-ip", "-g")]
    assert result["devices"][0]["after"] == {"address": "198.18.0.10", "netmask": MASK}
    assert module.state[0]["gateway"] == "198.18.0.254"


def test_check_mode_runs_no_set_and_reports_the_diff():
    plan = [want(0, "198.18.0.10", gateway="198.18.0.1"), want(1, "198.18.0.11", gateway="198.18.0.1")]
    state = {0: {}, 1: {"address": "198.18.0.11", "netmask": MASK, "gateway": "198.18.0.1"}}
    result, module = configure(plan, state, check_mode=True)
    assert result["changed"] is True
    assert module.sets() == [] and all("-g" in c for c in module.calls)
    assert module.state[0]["address"] == ""
    assert result["diff"] == [
        {
            "before": {
                "device 0": {"address": "", "netmask": "", "gateway": ""},
                "device 1": {"address": "198.18.0.11", "netmask": MASK, "gateway": "198.18.0.1"},
            },
            "after": {
                "device 0": {"address": "198.18.0.10", "netmask": MASK, "gateway": "198.18.0.1"},
                "device 1": {"address": "198.18.0.11", "netmask": MASK, "gateway": "198.18.0.1"},
            },
        }
    ]
    assert result["devices"][0]["commands"] == [
        HCCN + " -i 0 -ip -s address 198.18.0.10 netmask 255.255.255.0",
        HCCN + " -i 0 -gateway -s gateway 198.18.0.1",
    ]


BAD_PLANS = [
    ([want(0, "198.18.0.10"), want(1, "198.18.0.10")], "address 198.18.0.10 is wanted on devices 0, 1"),
    ([want(0, "198.18.0.10", gateway="198.18.1.1")], "gateway 198.18.1.1 is outside the device subnet 198.18.0.0/24"),
    ([want(0, "192.168.1.20")], "192.168.1.0/24, reserved for the device's internal vNIC"),
    ([want(0, "198.18.0.255")], "broadcast address of 198.18.0.0/24"),
    ([want(0, "198.18.0.0")], "network address of 198.18.0.0/24"),
    ([want(0, "198.18.0.10", netdetect="198.18.0.255")], "netdetect 198.18.0.255 is the broadcast address"),
    ([want(0, "198.18.0.10", netdetect="255.255.255.255")], "netdetect 255.255.255.255 is the broadcast address"),
    ([want(0, "198.18.0.10", gateway="198.18.0.10")], "gateway 198.18.0.10 is the device's own address"),
    ([want(0, "198.18.0.10"), want(1, "198.18.0.11", gateway="198.18.0.10")], "is the address of device 0"),
    ([want(0, "198.18.0.300")], "address '198.18.0.300' is not an IPv4 address"),
    ([want(0, "198.18.0.10", netmask="255.0.255.0")], "netmask '255.0.255.0' is not a netmask"),
    ([want(0, "198.18.0.10", netmask="31")], "leaves no room"),
    ([want(0, "127.0.0.5", netmask="8")], "is a loopback address"),
    ([want(0, "224.0.0.5")], "is a multicast address"),
    ([want(0, "198.18.0.10", gateway="0.0.0.0")], "leave gateway empty"),
    ([want(16, "198.18.0.10")], "device_id 16 is out of range"),
    ([want(0, "198.18.0.10"), want(0, "198.18.0.11")], "device 0 is listed more than once"),
]


@pytest.mark.parametrize("plan, message", BAD_PLANS, ids=[case[-1] for case in BAD_PLANS])
def test_bad_value_fails_before_any_call(plan, message):
    with pytest.raises(ConfigError) as info:
        configure(plan, {d: {} for d in range(8)})
    assert message in info.value.msg
    assert "nothing was changed" in info.value.msg


def test_one_bad_device_sets_nothing_on_the_good_ones():
    plan = [want(0, "198.18.0.10"), want(1, "198.18.0.11"), want(2, "198.18.0.12", gateway="198.18.9.1")]
    module = FakeDevices({d: {} for d in range(3)}, params={"devices": plan, "parallel": 4, "timeout": 30})
    with pytest.raises(ConfigError) as info:
        Configurator(module, HccnTool(module, HCCN, runner=module.run_tool)).run()
    assert module.calls == []  # not even a read
    assert info.value.details["problems"] == [
        "device 2: gateway 198.18.9.1 is outside the device subnet 198.18.0.0/24 (address 198.18.0.12); "
        "hccn_tool refuses it — use a gateway inside 198.18.0.0/24"
    ]


def test_every_problem_is_listed_at_once():
    plan = [want(0, "192.168.1.5"), want(1, "198.18.0.255", gateway="198.18.5.1")]
    with pytest.raises(ConfigError) as info:
        configure(plan, {0: {}, 1: {}})
    assert len(info.value.details["problems"]) == 3


def test_read_back_mismatch_fails():
    plan = [want(0, "198.18.0.10", netdetect="198.18.0.1"), want(1, "198.18.0.11", netdetect="198.18.0.1")]
    with pytest.raises(ConfigError) as info:
        configure(plan, {0: {}, 1: {}}, ignore_sets={(1, "-netdetect")})
    assert "device 1 netdetect: set '198.18.0.1', the device reports ''" in info.value.msg
    assert info.value.details["changed"] is True


def test_refused_set_stops_and_reports_what_was_applied():
    plan = [want(0, "198.18.0.10", gateway="198.18.0.1"), want(1, "198.18.0.11", gateway="198.18.0.1")]
    answers = {(HCCN, "-i", "1", "-ip", "-s", "address", "198.18.0.11", "netmask", MASK): CONFLICT}
    with pytest.raises(ConfigError) as info:
        configure(plan, {0: {}, 1: {}}, answers=answers)
    msg = info.value.msg
    assert msg.startswith("device 1: `%s -i 1 -ip -s address 198.18.0.11" % HCCN)
    assert "The ip address configured is conflicted! (rc=7)" in msg and "another device" in msg
    assert info.value.details["applied"] == [HCCN + " -i 0 -ip -s address 198.18.0.10 netmask 255.255.255.0"]
    assert info.value.details["changed"] is True


def test_unreadable_device_fails_before_any_set():
    answers = {(HCCN, "-i", "1", "-ip", "-g"): EXEC_FAILED}
    with pytest.raises(ConfigError) as info:
        configure([want(0, "198.18.0.10"), want(1, "198.18.0.11")], {0: {}, 1: {}}, answers=answers)
    assert "before any change: cannot read device 1" in info.value.msg
    assert "Command execute failed!" in info.value.msg


def test_an_unreadable_answer_sets_nothing_and_names_the_field_and_the_answer():
    # the masked address MindCluster's log-collection guide prints for `-ip -g`: no device value, so no change
    answers = {(HCCN, "-i", "1", "-ip", "-g"): (0, "ipaddr:10.xx.xx.10\nnetmask:255.255.255.0\n", "")}
    with pytest.raises(ConfigError) as info:
        configure([want(0, "198.18.0.10"), want(1, "198.18.0.11")], {0: {}, 1: {}}, answers=answers)
    assert "`%s -i 1 -ip -g` printed 'ipaddr:10.xx.xx.10\\nnetmask:255.255.255.0\\n' for device 1" % HCCN in info.value.msg
    assert info.value.msg.startswith("before any change: ") and "(ipaddr unknown)" in info.value.msg
    assert info.value.details["stdout"].startswith("ipaddr:10.xx.xx.10")


def test_address_moving_between_devices_is_ordered():
    # device 1 wants device 0's current address; device 0 moves away first.
    state = {0: {"address": "198.18.0.11", "netmask": MASK}, 1: {"address": "198.18.0.50", "netmask": MASK}}
    result, module = configure([want(0, "198.18.0.10"), want(1, "198.18.0.11")], state)
    assert module.sets() == [
        "-i 0 -ip -s address 198.18.0.10 netmask 255.255.255.0",
        "-i 1 -ip -s address 198.18.0.11 netmask 255.255.255.0",
    ]
    assert result["changed"] is True


def test_address_swap_is_refused_before_any_set():
    state = {0: {"address": "198.18.0.11", "netmask": MASK}, 1: {"address": "198.18.0.10", "netmask": MASK}}
    with pytest.raises(ConfigError) as info:
        configure([want(0, "198.18.0.10"), want(1, "198.18.0.11")], state)
    assert "swap between devices" in info.value.msg


@pytest.mark.parametrize(
    "moving, holders, waves",
    [
        ({0: "a", 1: "b"}, {0: "x", 1: "y"}, [[0, 1]]),
        ({0: "b", 1: "c", 2: "d"}, {0: "a", 1: "b", 2: "c"}, [[2], [1], [0]]),
        ({1: "a"}, {0: "a", 1: "b"}, [[1]]),  # held by a device that does not move: the set will fail loudly
    ],
)
def test_ip_waves(moving, holders, waves):
    assert ip_waves(moving, {d: {"address": a} for d, a in holders.items()}) == waves


def test_reads_run_concurrently():
    plan = [want(d, "198.18.0.%d" % (10 + d)) for d in range(8)]
    module = FakeDevices(as_state(plan), params={"devices": plan, "parallel": 8, "timeout": 30})
    module.delay = 0.05

    def slow(argv, timeout=None):
        import time

        with module._lock:
            module.active += 1
            module.max_active = max(module.max_active, module.active)
        time.sleep(module.delay)
        try:
            return module.run_tool(argv, timeout)
        finally:
            with module._lock:
                module.active -= 1

    result = Configurator(module, HccnTool(module, HCCN, runner=slow)).run()
    assert result["changed"] is False and module.max_active > 1


CONF = "address_0=198.18.0.10\nnetmask_0=255.255.255.0\ngateway_0=198.18.0.1\nsend_arp_status_0=1\n"


def configure_with_conf(tmp_path, text, devices, state, check_mode=False, **params):
    conf = tmp_path / "hccn.conf"
    conf.write_text(text)
    module = FakeDevices(state, params={"devices": devices, "parallel": 4, "timeout": 30, "hccn_conf": str(conf), **params})
    module.check_mode = check_mode
    configurator = Configurator(module, HccnTool(module, HCCN, runner=module.run_tool))
    return configurator.run(), module, configurator


def test_a_stale_conf_line_is_set_again_from_the_device(tmp_path):
    """The device is right, the file stale: the address is set again (with the gateway after it), as hccn_tool rewrites the line."""
    state = {0: {"address": "198.18.0.10", "netmask": MASK, "gateway": "198.18.0.1"}}
    stale = CONF.replace("address_0=198.18.0.10", "address_0=198.18.0.99")
    result, module, _configurator = configure_with_conf(tmp_path, stale, [want(0, "198.18.0.10")], state, check_mode=True)
    assert result["changed"] is True and module.sets() == []
    assert result["devices"][0]["stale_conf_keys"] == ["address"]
    assert result["devices"][0]["commands"] == [
        HCCN + " -i 0 -ip -s address 198.18.0.10 netmask 255.255.255.0",
        HCCN + " -i 0 -gateway -s gateway 198.18.0.1",
    ]
    conf_diff = result["diff"][1]
    assert conf_diff["before_header"] == str(tmp_path / "hccn.conf") and conf_diff["before"] == stale
    # what hccn_tool leaves: the keys it wrote deleted and appended at the end
    assert conf_diff["after"] == "send_arp_status_0=1\naddress_0=198.18.0.10\nnetmask_0=255.255.255.0\ngateway_0=198.18.0.1\n"
    assert (tmp_path / "hccn.conf").read_text() == stale  # check mode wrote nothing


def test_a_conf_that_agrees_needs_no_set_but_every_field_is_read(tmp_path):
    state = {0: {"address": "198.18.0.10", "netmask": MASK, "gateway": "198.18.0.1"}}
    result, module, _configurator = configure_with_conf(tmp_path, CONF, [want(0, "198.18.0.10")], state)
    assert result["changed"] is False and module.sets() == []
    assert sorted(c[3] for c in module.calls) == ["-gateway", "-ip", "-netdetect"]
    assert result["diff"][1]["before"] == result["diff"][1]["after"] == CONF


def test_a_stale_netdetect_line_is_set_again_and_the_file_checked_after(tmp_path):
    state = {0: {"address": "198.18.0.10", "netmask": MASK, "gateway": "198.18.0.1", "netdetect": "198.18.0.1"}}
    with pytest.raises(ConfigError) as info:
        # the fake tool does not write the file: as when hccn_tool writes another file than hccn_conf
        configure_with_conf(tmp_path, CONF + "netdetect_0=198.18.0.7\n", [want(0, "198.18.0.10")], state)
    assert "still disagrees with them on netdetect_0" in info.value.msg and "point the hccn_conf option" in info.value.msg
    assert info.value.details["changed"] is True


def test_a_line_no_set_can_fix_is_a_warning(tmp_path):
    state = {0: {"address": "198.18.0.10", "netmask": MASK}}  # no gateway on the device, the file claims one
    result, module, configurator = configure_with_conf(tmp_path, CONF, [want(0, "198.18.0.10")], state)
    assert result["changed"] is False and module.sets() == []
    assert result["devices"][0]["stale_conf_keys"] == []
    assert configurator.warnings == [
        "%s has gateway_0=198.18.0.1 but device 0 has no gateway, and hccn_tool cannot remove one: delete that line "
        "from %s by hand (the device is the truth)" % (tmp_path / "hccn.conf", tmp_path / "hccn.conf")
    ]


def test_rewrite_stale_conf_false_leaves_the_file_alone(tmp_path):
    state = {0: {"address": "198.18.0.10", "netmask": MASK, "gateway": "198.18.0.1"}}
    stale = CONF.replace("address_0=198.18.0.10", "address_0=198.18.0.99")
    result, module, _configurator = configure_with_conf(tmp_path, stale, [want(0, "198.18.0.10")], state, rewrite_stale_conf=False)
    assert result["changed"] is False and module.calls == [(HCCN, "-i", "0", "-ip", "-g")] and len(result["diff"]) == 1
