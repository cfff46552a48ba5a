"""hccn_config against the simulator: the module run exactly as Ansible runs it, on a simulated server."""

from __future__ import annotations

from tests.helpers.ansible_cli import run_module

MASK = "255.255.255.0"


def smp_devices(host_base=100, gateway=True):
    """The seed 004 layout moved to 198.18.100-103.0/24, with gateway and netdetect on .1."""
    devices = []
    for device in range(8):
        net = "198.18.%d" % (100 + device % 4)
        entry = {"device_id": device, "address": "%s.%d" % (net, host_base + (1 if device < 4 else 0)), "netmask": MASK}
        if gateway:
            entry.update(gateway=net + ".1", netdetect=net + ".1")
        devices.append(entry)
    return devices


def configure(server, devices, check=False, diff=False, **args):
    args.setdefault("hccn_conf", str(server.hccn_conf))  # the file this server's hccn_tool writes, not this machine's
    return run_module("hccn_config", dict(args, devices=devices), env=server.env, check=check, diff=diff)


def device_values(server):
    """What the simulated devices hold, straight from the simulator's state."""
    return {
        int(d): (v.get("ip") or "", v.get("netmask") or "", v.get("gateway") or "", v.get("netdetect") or "")
        for d, v in server.show()["devices"].items()
    }


def test_first_run_sets_second_run_changes_nothing(sim_cluster):
    server = sim_cluster(servers=1, chip="910A", preset_ips=False).servers[0]
    first = configure(server, smp_devices())
    assert first["_rc"] == 0 and not first.get("failed"), first
    assert first["changed"] is True
    assert [d["changes"] for d in first["devices"]] == [["ip", "gateway", "netdetect"]] * 8
    assert first["hccn_tool"] == str(server.bin_dir / "hccn_tool")
    values = device_values(server)
    assert values[0] == ("198.18.100.101", MASK, "198.18.100.1", "198.18.100.1")
    assert values[7] == ("198.18.103.100", MASK, "198.18.103.1", "198.18.103.1")
    # the device answers hccn_tool itself, byte for byte
    assert server.hccn_tool("-i", "5", "-ip", "-g").stdout == "ipaddr:198.18.101.100\nnetmask:255.255.255.0\n"

    second = configure(server, smp_devices())
    assert second["changed"] is False and all(d["commands"] == [] for d in second["devices"]), second
    assert device_values(server) == values


def test_check_mode_with_diff_changes_nothing(sim_cluster):
    server = sim_cluster(servers=1, chip="910A", preset_ips=False).servers[0]
    configure(server, smp_devices())
    before = device_values(server)
    result = configure(server, smp_devices(host_base=120), check=True, diff=True)
    assert result["changed"] is True and not result.get("failed"), result
    assert device_values(server) == before
    assert result["diff"][0]["before"]["device 0"]["address"] == "198.18.100.101"
    assert result["diff"][0]["after"]["device 0"]["address"] == "198.18.100.121"
    # the address moves, so the gateway (same value) is set again after it
    assert result["devices"][0]["changes"] == ["ip", "gateway"]


def test_partial_change_touches_only_the_changed_device(sim_cluster):
    server = sim_cluster(servers=1, chip="910A", preset_ips=False).servers[0]
    configure(server, smp_devices())
    wanted = smp_devices()
    wanted[3]["netdetect"] = "198.18.103.100"  # the partner device instead of the gateway
    result = configure(server, wanted)
    assert result["changed"] is True
    assert [d["device_id"] for d in result["devices"] if d["changed"]] == [3]
    assert result["devices"][3]["commands"] == ["%s -i 3 -netdetect -s address 198.18.103.100" % (server.bin_dir / "hccn_tool")]
    assert device_values(server)[3][3] == "198.18.103.100"


def test_bad_value_sets_nothing_anywhere(sim_cluster):
    server = sim_cluster(servers=1, chip="910A", preset_ips=False).servers[0]
    wanted = smp_devices()
    wanted[6]["gateway"] = "198.18.99.1"  # outside 198.18.102.0/24
    result = configure(server, wanted)
    assert result["failed"] is True and result["changed"] is False
    assert "device 6: gateway 198.18.99.1 is outside the device subnet 198.18.102.0/24" in result["msg"]
    assert set(device_values(server).values()) == {("", "", "", "")}


def test_unreadable_device_fails_before_any_set(sim_cluster):
    server = sim_cluster(servers=1, chip="910A", preset_ips=False).servers[0]
    server.fault("error", "--device", "2")
    result = configure(server, smp_devices())
    assert result["failed"] is True and result["changed"] is False
    assert "cannot read device 2" in result["msg"] and "Command execute failed!" in result["msg"]
    assert set(device_values(server).values()) == {("", "", "", "")}


def test_missing_hccn_tool_says_what_to_install(sim_cluster):
    server = sim_cluster(servers=1, chip="910A", preset_ips=False).servers[0]
    server.fault("driver-missing")
    result = configure(server, smp_devices())
    assert result["failed"] is True and result["changed"] is False
    assert "hccn_tool not found on PATH" in result["msg"] and "install the Ascend NPU driver" in result["msg"]
    result = configure(server, smp_devices(), hccn_tool="/nonexistent/hccn_tool")
    assert "hccn_tool=/nonexistent/hccn_tool is not an executable file" in result["msg"]


def test_a_stale_conf_is_rewritten_by_setting_the_device_value_again(sim_cluster):
    server = sim_cluster(servers=1, chip="910A", preset_ips=False).servers[0]
    configure(server, smp_devices())
    server.fault("stale-conf", "--device", "2")  # address_2 in the file is now wrong; the device is right
    stale = server.hccn_conf.read_text()
    before = device_values(server)
    checked = configure(server, smp_devices(), check=True, diff=True)
    assert checked["changed"] is True and checked["devices"][2]["stale_conf_keys"] == ["address"], checked
    assert [d["device_id"] for d in checked["devices"] if d["changed"]] == [2]
    assert "address_2=198.18.102.101\n" in checked["diff"][1]["after"] and checked["diff"][1]["before"] == stale
    assert server.hccn_conf.read_text() == stale and device_values(server) == before  # check mode: nothing changed
    fixed = configure(server, smp_devices())
    assert fixed["changed"] is True and not fixed.get("failed"), fixed
    assert "address_2=198.18.102.101\n" in server.hccn_conf.read_text() and device_values(server) == before
    again = configure(server, smp_devices())
    assert again["changed"] is False, again


def test_a_conf_the_driver_does_not_write_fails_naming_it(sim_cluster, tmp_path):
    server = sim_cluster(servers=1, chip="910A", preset_ips=False).servers[0]
    configure(server, smp_devices())
    other = tmp_path / "other-hccn.conf"
    other.write_text("address_0=198.18.100.250\n")  # a file hccn_tool does not write
    result = configure(server, smp_devices()[:1], hccn_conf=str(other))
    assert result["failed"] is True and result["changed"] is True
    assert result["msg"].startswith(f"hccn_tool set the devices' values again but {other} still disagrees with them on address_0")
    assert "point the hccn_conf option (ascend_hccn_conf) at the file this driver writes" in result["msg"]
