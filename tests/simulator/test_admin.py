"""ascend-sim init / install / cluster / show."""

from __future__ import annotations

import json
import os
import stat
import sys

import pytest

from tests.simulator.simhelpers import ASCEND_SIM, run, sim


def test_init_defaults(tmp_path):
    state = tmp_path / "s"
    out = sim("init", "--state", state, "--chip", "910B", "--hccn-conf", tmp_path / "hccn.conf")
    assert out.startswith("ascend-sim: initialised %s: 910B, devices 0,1,2,3,4,5,6,7, mode fabric" % state)
    data = json.loads(sim("show", "--state", state))
    assert data["chip"] == "910B" and data["mode"] == "fabric" and data["fabric"] == str(state / "fabric")
    assert sorted(data["devices"], key=int) == [str(i) for i in range(8)]
    assert data["settle"] == 1.0 and data["latency"] == 0.0
    assert stat.S_IMODE(os.stat(tmp_path / "hccn.conf").st_mode) == 0o640
    assert (state / "state.json").exists() and (state / "state.cache").exists()


@pytest.mark.parametrize("chip, count", [("910A", 8), ("A2", 8), ("910B", 8), ("A3", 16)])
def test_chip_profiles(tmp_path, chip, count):
    sim("-q", "init", "--state", tmp_path / "s", "--chip", chip, "--hccn-conf", tmp_path / "c")
    assert len(json.loads(sim("show", "--state", tmp_path / "s"))["devices"]) == count


@pytest.mark.parametrize(
    "args, message",
    [
        (["--chip", "910A", "--devices", "16"], "a 910A host has 1 to 8 devices"),
        (["--chip", "910A", "--device-ids", "0,8"], "out of range for 910A: 0..7"),
        (["--chip", "910B", "--device-ids", "0,16"], "out of range for 910B: 0..15"),
        (["--chip", "910C9"], "unknown chip"),
        (["--chip", "910B", "--mode", "bed", "--fabric", "/tmp/x"], "--fabric is for --mode fabric"),
    ],
)
def test_init_refuses_bad_layouts(tmp_path, args, message):
    proc = run([ASCEND_SIM, "init", "--state", tmp_path / "s", "--hccn-conf", tmp_path / "c", *args])
    assert proc.returncode != 0 and message in proc.stderr


def test_init_is_idempotent_and_force_resets(tmp_path):
    args = ["init", "--state", tmp_path / "s", "--chip", "910B", "--hccn-conf", tmp_path / "c", "--settle", "0"]
    sim(*args)
    sim("-q", "fault", "--state", tmp_path / "s", "link", "--device", "0", "--down")
    assert "already initialised with these settings (unchanged)" in sim(*args)
    assert json.loads(sim("show", "--state", tmp_path / "s"))["devices"]["0"]["link"] == "DOWN"
    proc = run([ASCEND_SIM, *args[:-2], "--settle", "2"])
    assert proc.returncode == 1 and "different settings (settle); add --force" in proc.stderr
    (tmp_path / "c").write_text("address_0=1.2.3.4\n")
    sim(*args, "--force")
    assert json.loads(sim("show", "--state", tmp_path / "s"))["devices"]["0"]["link"] == "UP"
    assert (tmp_path / "c").read_text() == ""


def test_install_writes_fast_wrappers(tmp_path):
    sim("-q", "init", "--state", tmp_path / "s", "--chip", "910A", "--hccn-conf", tmp_path / "c")
    sim("-q", "install", "--bin-dir", tmp_path / "bin", "--state", tmp_path / "s", "--python", sys.executable)
    for tool in ("hccn_tool", "npu-smi"):
        assert os.access(tmp_path / "bin" / tool, os.X_OK)
    assert (tmp_path / "bin" / "npu-smi").read_text().splitlines()[0] == "#!%s -S" % sys.executable
    assert (tmp_path / "bin" / "hccn_tool").read_text().splitlines()[0] == "#!/bin/sh"  # the fast path
    proc = run([tmp_path / "bin" / "hccn_tool", "-i", "7", "-link", "-g"], env={"ASCEND_SIM_STATE": ""})
    assert (proc.returncode, proc.stdout) == (0, "link status: UP\n")
    installs = json.loads(sim("show", "--state", tmp_path / "s"))["installs"]
    assert installs == [{"bin_dir": str(tmp_path / "bin"), "python": sys.executable, "state": str(tmp_path / "s")}]


def test_env_overrides_the_installed_default(tmp_path):
    for name in ("a", "b"):
        sim(
            "-q",
            "init",
            "--state",
            tmp_path / name,
            "--chip",
            "910B",
            "--hccn-conf",
            tmp_path / ("%s.conf" % name),
            "--device-ids",
            "0" if name == "a" else "1",
        )
    sim("-q", "install", "--bin-dir", tmp_path / "bin", "--state", tmp_path / "a")
    assert run([tmp_path / "bin" / "hccn_tool", "-i", "1", "-link", "-g"]).returncode == 4
    proc = run([tmp_path / "bin" / "hccn_tool", "-i", "1", "-link", "-g"], env={"ASCEND_SIM_STATE": str(tmp_path / "b")})
    assert proc.returncode == 0


def cluster(tmp_path, *args):
    return json.loads(sim("cluster", "--root", tmp_path / "cl", *args))


def test_cluster_description(tmp_path):
    desc = cluster(tmp_path, "--servers", "2", "--chip", "910B", "--devices", "8")
    assert desc == json.loads((tmp_path / "cl" / "cluster.json").read_text())
    assert [s["name"] for s in desc["servers"]] == ["server0", "server1"]
    for server in desc["servers"]:
        assert os.access(os.path.join(server["bin_dir"], "hccn_tool"), os.X_OK)
        assert os.path.exists(server["hccn_conf"])
        assert server["device_ids"] == list(range(8))
        state = json.loads(sim("show", "--state", server["state_dir"]))
        assert state["fabric"] == desc["fabric"] and state["host_id"] == server["name"]


def test_cluster_quiet_prints_nothing_and_still_describes_the_cluster(tmp_path):
    assert sim("-q", "cluster", "--root", tmp_path / "cl", "--servers", "1", "--chip", "910B", "--devices", "2") == ""
    assert [s["name"] for s in json.loads((tmp_path / "cl" / "cluster.json").read_text())["servers"]] == ["server0"]


def hccn(server, *args):
    proc = run([os.path.join(server["bin_dir"], "hccn_tool"), *args])
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_cluster_preset_amp_plan(tmp_path):
    desc = cluster(tmp_path, "--servers", "2", "--chip", "910B", "--devices", "8", "--preset-ips", "--settle", "0")
    s0, s1 = desc["servers"]
    assert hccn(s0, "-i", "0", "-ip", "-g") == "ipaddr:198.18.1.10\nnetmask:255.255.0.0\n"
    assert hccn(s1, "-i", "7", "-ip", "-g") == "ipaddr:198.18.2.17\nnetmask:255.255.0.0\n"
    assert hccn(s1, "-i", "7", "-gateway", "-g") == "default gateway:198.18.0.1, Iface:eth7\n"
    assert hccn(s0, "-i", "3", "-netdetect", "-g") == "netdetect addr: 198.18.0.1\n"
    assert hccn(s0, "-i", "3", "-net_health", "-g") == "net health status: Success\n"
    # the IPs went in through hccn_tool: hccn.conf holds them
    conf = open(s1["hccn_conf"]).read().splitlines()
    assert conf[:4] == ["address_0=198.18.2.10", "netmask_0=255.255.0.0", "gateway_0=198.18.0.1", "netdetect_0=198.18.0.1"]


def test_cluster_preset_smp_plan_910a(tmp_path):
    desc = cluster(tmp_path, "--servers", "2", "--chip", "910A", "--preset-ips", "--netdetect", "peer", "--settle", "0")
    s0, s1 = desc["servers"]
    expected0 = [
        "198.18.0.101",
        "198.18.1.101",
        "198.18.2.101",
        "198.18.3.101",
        "198.18.0.100",
        "198.18.1.100",
        "198.18.2.100",
        "198.18.3.100",
    ]
    got0 = [hccn(s0, "-i", str(d), "-ip", "-g").splitlines()[0][len("ipaddr:") :] for d in range(8)]
    assert got0 == expected0
    assert hccn(s1, "-i", "4", "-ip", "-g") == "ipaddr:198.18.0.110\nnetmask:255.255.255.0\n"
    assert hccn(s0, "-i", "5", "-gateway", "-g") == "default gateway:198.18.1.1, Iface:eth5\n"
    assert hccn(s0, "-i", "2", "-netdetect", "-g") == "netdetect addr: 198.18.2.111\n"
    assert hccn(s1, "-i", "2", "-netdetect", "-g") == "netdetect addr: 198.18.2.101\n"
    assert hccn(s0, "-i", "2", "-net_health", "-g") == "net health status: Success\n"


def test_cluster_latency(tmp_path):
    desc = cluster(tmp_path, "--servers", "1", "--chip", "A3", "--devices", "16", "--preset-ips", "--latency", "0.1")
    state = json.loads(sim("show", "--state", desc["servers"][0]["state_dir"]))
    assert state["latency"] == 0.1 and len(state["devices"]) == 16


def test_cluster_rerun_is_idempotent(tmp_path):
    args = ("--servers", "2", "--chip", "910B", "--devices", "8", "--preset-ips", "--settle", "0")
    first = cluster(tmp_path, *args)
    conf = open(first["servers"][0]["hccn_conf"]).read()
    assert cluster(tmp_path, *args) == first
    assert sorted(open(first["servers"][0]["hccn_conf"]).read().splitlines()) == sorted(conf.splitlines())


def test_show_fabric(tmp_path):
    desc = cluster(tmp_path, "--servers", "2", "--chip", "910B", "--devices", "2", "--preset-ips")
    hosts = json.loads(sim("show", "--state", desc["servers"][0]["state_dir"], "--fabric"))
    assert [h["host_id"] for h in hosts] == ["server0", "server1"]
    assert hosts[1]["devices"]["1"] == {"ip": "198.18.2.11", "netmask": "255.255.0.0", "link": "UP", "tls": 0}


def test_hand_edited_state_json_is_honoured(tmp_path):
    sim("-q", "init", "--state", tmp_path / "s", "--chip", "910B", "--hccn-conf", tmp_path / "c")
    path = tmp_path / "s" / "state.json"
    data = json.loads(path.read_text())
    data["devices"]["4"]["link"] = "DOWN"
    path.write_text(json.dumps(data))
    proc = run([ASCEND_SIM.parent / "hccn_tool", "-i", "4", "-link", "-g"], env={"ASCEND_SIM_STATE": str(tmp_path / "s")})
    assert proc.stdout == "link status: DOWN\n"
