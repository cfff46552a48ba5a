"""The installed hccn_tool's fast path (simulator/ascend_sim/answers.py): byte identity is the contract.

Every answer is compared three ways: the installed wrapper (fast path), the same wrapper with
``ASCEND_SIM_NO_FAST_PATH=1`` and ``simulator/bin/hccn_tool`` (Python). The wrapper is installed
with a logging stand-in for the interpreter, so each test also knows whether Python ran.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from tests.simulator.simhelpers import BIN, Host, sim

CACHED = ("-ip", "-gateway", "-netdetect", "-mac", "-tls", "-link")


class Installed:
    """A simulated host with wrappers whose interpreter logs every start to ``python.log``."""

    def __init__(self, root, chip="910B", devices=None, extra=()):
        self.host = Host(root, "h", chip=chip, devices=devices, fabric=root / "fabric", extra=extra)
        self.bin = root / "h" / "bin"
        self.log = root / "python.log"
        fake = root / "fakepy" / "python"
        fake.parent.mkdir()
        fake.write_text('#!/bin/sh\necho run >>%s\nexec %s "$@"\n' % (self.log, sys.executable))
        fake.chmod(0o755)
        sim("-q", "install", "--bin-dir", self.bin, "--state", self.host.state, "--python", fake)
        self.log.write_text("")

    def run(self, argv, env=None, cwd=None):
        full = {k: v for k, v in os.environ.items() if not k.startswith("ASCEND_SIM")}
        full["ASCEND_SIM_STATE"] = str(self.host.state)
        full.update(env or {})
        proc = subprocess.run([str(a) for a in argv], capture_output=True, env=full, cwd=cwd, timeout=60, check=False)
        return proc.returncode, proc.stdout, proc.stderr

    def fast(self, *args, env=None, cwd=None):
        return self.run([self.bin / "hccn_tool", *args], env=env, cwd=cwd)

    def slow(self, *args, env=None, cwd=None):
        return self.run([self.bin / "hccn_tool", *args], env=dict(env or {}, ASCEND_SIM_NO_FAST_PATH="1"), cwd=cwd)

    def python_runs(self):
        """How many times the interpreter started since the last call (then forget them)."""
        count = len(self.log.read_text().splitlines())
        self.log.write_text("")
        return count

    def same(self, *args, env=None, cwd=None, checkout=True):
        """The paths agree on (rc, stdout, stderr); return the fast path's answer. ``checkout``: the checkout's
        ``simulator/bin/hccn_tool`` too (the same Python as the wrapper's slow path: the per-device sweeps leave it out)."""
        fast = self.fast(*args, env=env, cwd=cwd)
        assert self.slow(*args, env=env, cwd=cwd) == fast, args
        if checkout:
            assert self.run([BIN / "hccn_tool", *args], env=env, cwd=cwd) == fast, args
        return fast

    def device_ids(self):
        return sorted(self.host.show()["devices"], key=int)

    def check_all_cached(self, commands=CACHED):
        """Every device x cached command: identical, and answered without starting Python."""
        ids = self.device_ids()
        for dev in ids:
            for cmd in commands:
                self.python_runs()
                fast = self.fast("-i", dev, cmd, "-g")
                assert self.python_runs() == 0, (dev, cmd)
                assert self.same("-i", dev, cmd, "-g", checkout=dev == ids[0]) == fast


def configure(inst):
    host = inst.host
    host.set_ip(0, "198.18.1.10", "255.255.0.0")
    host.set_ip(1, "192.168.100.101")
    host.set_ip(5, "10.0.5.2", "255.255.255.252")
    assert host.ok("-i", "0", "-gateway", "-s", "gateway", "198.18.0.1") == "Cmd executed successfully!\n"
    assert host.ok("-i", "1", "-netdetect", "-s", "address", "192.168.100.1") == "Cmd executed successfully!\n"


STATES = {
    "fresh": lambda inst: None,
    "configured": configure,
    "device_error": lambda inst: (configure(inst), inst.host.fault("error", "--device", "0,5")),
    "latency": lambda inst: (configure(inst), inst.host.fault("latency", "--seconds", "0.01")),
    "link_down": lambda inst: (configure(inst), inst.host.fault("link", "--device", "1,3", "--down")),
    "unreachable": lambda inst: (configure(inst), inst.host.fault("unreachable", "--ip", "198.18.0.1")),
    "stale_conf": lambda inst: (configure(inst), inst.host.fault("stale-conf")),
    "tls": lambda inst: (configure(inst), inst.host.fault("tls", "--device", "0,2", "--switch", "1")),
    "health": lambda inst: (configure(inst), inst.host.fault("health", "--device", "1", "--status", "Socket fail")),
    "cleared": lambda inst: (configure(inst), inst.host.fault("error", "--device", "all"), inst.host.fault("clear")),
}


@pytest.mark.parametrize("name", sorted(STATES))
def test_every_cached_answer_is_byte_identical(tmp_path, name):
    inst = Installed(tmp_path)
    STATES[name](inst)
    inst.check_all_cached()


@pytest.mark.parametrize(
    "chip,extra",
    [
        ("910A", ()),
        ("A3", ("--tls", "1")),
        ("910B", ("--driver-variant", "old")),
        ("910B", ("--device-ids", "0,3,8,15")),
    ],
)
def test_chips_and_variants(tmp_path, chip, extra):
    inst = Installed(tmp_path, chip=chip, extra=extra)
    ids = inst.device_ids()
    inst.host.set_ip(ids[-1], "198.18.9.9", "255.255.0.0")
    assert inst.host.ok("-i", ids[-1], "-netdetect", "-s", "address", "198.18.0.1") == "Cmd executed successfully!\n"
    inst.check_all_cached()
    if extra == ("--driver-variant", "old"):
        assert inst.fast("-i", ids[-1], "-netdetect", "-g")[1] == b"netdetect address: 198.18.0.1\n"


ODD = [
    (),
    ("-h",),
    ("-i", "01", "-ip", "-g"),  # the tool accepts it; the fast path only knows canonical ids
    ("-i", "99", "-ip", "-g"),
    ("-i", "8", "-ip", "-g"),  # no such device on an 8-device host
    ("-i", "-1", "-ip", "-g"),
    ("-i", "a/b", "-ip", "-g"),
    ("-i", "../x", "-mac", "-g"),
    ("-i", "0", "-ip", "-g", "extra"),
    ("-i", "0", "-ip", "-x"),
    ("-i", "0", "-ping", "-g"),
    ("-i", "0", "-net_health", "-g"),
    ("-i", "0", "-cfg", "recovery"),
    ("-i", "0", "-state", "-g"),
    ("-x", "0", "-ip", "-g"),
    ("-a", "-cfg", "recovery"),
]


@pytest.mark.parametrize("args", ODD, ids=[" ".join(a) or "none" for a in ODD])
def test_anything_else_runs_the_simulator(tmp_path, args):
    inst = Installed(tmp_path)
    configure(inst)
    inst.python_runs()
    inst.fast(*args)
    assert inst.python_runs() == 1
    inst.same(*args)


def test_set_commands_refresh_the_answers(tmp_path):
    inst = Installed(tmp_path)
    assert inst.same("-i", "3", "-ip", "-g") == (13, b"", b"Get ipconf failed, because no ip was preset there!\n")
    inst.python_runs()
    rc, out, err = inst.fast("-i", "3", "-ip", "-s", "address", "198.18.3.3", "netmask", "255.255.0.0")
    assert (rc, out, err) == (0, b"Cmd executed successfully!\n", b"")
    assert inst.python_runs() == 1
    assert inst.fast("-i", "3", "-ip", "-g") == (0, b"ipaddr:198.18.3.3\nnetmask:255.255.0.0\n", b"")
    assert inst.python_runs() == 0
    inst.fast("-i", "3", "-gateway", "-s", "gateway", "198.18.0.1")
    inst.python_runs()
    assert inst.fast("-i", "3", "-gateway", "-g") == (0, b"default gateway:198.18.0.1, Iface:eth3\n", b"")
    assert inst.python_runs() == 0
    # old generations are pruned: the current one and at most two before it
    gens = [p.name for p in inst.host.state.iterdir() if p.name.startswith("answers.")]
    assert 1 <= len(gens) <= 3
    assert os.readlink(inst.host.state / "answers") in gens


def test_latency_fault_makes_fast_calls_sleep(tmp_path):
    inst = Installed(tmp_path)
    inst.host.fault("latency", "--seconds", "0.05")
    fake_bin = tmp_path / "fakebin"
    fake_bin.mkdir()
    sleep_log = tmp_path / "sleep.log"
    real_sleep = shutil.which("sleep")
    (fake_bin / "sleep").write_text('#!/bin/sh\necho "$*" >>%s\nexec %s "$@"\n' % (sleep_log, real_sleep))
    (fake_bin / "sleep").chmod(0o755)
    env = {"PATH": "%s:%s" % (fake_bin, os.environ["PATH"])}
    assert inst.fast("-i", "2", "-mac", "-g", env=env)[0] == 0
    assert inst.python_runs() == 0
    assert sleep_log.read_text() == "0.050000000\n"
    inst.host.fault("latency", "--seconds", "0")
    inst.fast("-i", "2", "-mac", "-g", env=env)
    assert sleep_log.read_text() == "0.050000000\n"  # no latency, no sleep


def test_latency_from_the_environment_runs_the_simulator(tmp_path):
    inst = Installed(tmp_path)
    inst.python_runs()
    assert inst.fast("-i", "0", "-link", "-g", env={"ASCEND_SIM_LATENCY": "0.001"})[0] == 0
    assert inst.python_runs() == 1


def test_fast_path_answers_without_python(tmp_path):
    inst = Installed(tmp_path)
    configure(inst)
    text = (inst.bin / "hccn_tool").read_text()
    broken = text.replace("python=", "python=/nonexistent/python #", 1)
    (inst.bin / "hccn_tool").write_text(broken)
    assert inst.fast("-i", "0", "-ip", "-g") == (0, b"ipaddr:198.18.1.10\nnetmask:255.255.0.0\n", b"")
    assert inst.fast("-i", "0", "-net_health", "-g")[0] == 127  # needs the interpreter


def test_hand_edits_and_missing_answers_fall_back(tmp_path):
    inst = Installed(tmp_path)
    path = inst.host.state / "state.json"
    data = json.loads(path.read_text())
    data["devices"]["4"]["link"] = "DOWN"
    with open(path, "r+", encoding="utf-8") as f:  # in place: same inode
        f.write(json.dumps(data, indent=2, sort_keys=True) + "\n")
        f.truncate()
    assert inst.same("-i", "4", "-link", "-g") == (0, b"link status: DOWN\n", b"")
    assert inst.python_runs() == 2  # fast (stale answers: fallback) + the no-fast-path wrapper
    shutil.rmtree(inst.host.state / os.readlink(inst.host.state / "answers"))
    assert inst.same("-i", "4", "-mac", "-g")[0] == 0
    (inst.host.state / "answers").unlink()
    inst.python_runs()
    assert inst.same("-i", "4", "-tls", "-g")[0] == 0
    assert inst.python_runs() == 2
    # `init` with the same settings renders answers for a state that has none
    sim(
        "-q",
        "init",
        "--state",
        inst.host.state,
        "--chip",
        "910B",
        "--hccn-conf",
        inst.host.conf,
        "--settle",
        "0.0",
        "--host-id",
        "h",
        "--fabric",
        tmp_path / "fabric",
    )
    inst.fast("-i", "4", "-tls", "-g")
    assert inst.python_runs() == 0


def test_state_directory_rules(tmp_path):
    inst = Installed(tmp_path)
    configure(inst)
    # relative $ASCEND_SIM_STATE, resolved from the caller's directory
    assert inst.same("-i", "1", "-ip", "-g", env={"ASCEND_SIM_STATE": "state"}, cwd=inst.host.base)[0] == 0
    assert inst.same("-i", "1", "-ip", "-g", env={"ASCEND_SIM_STATE": "nowhere"}, cwd=inst.host.base)[0] == 125
    # empty $ASCEND_SIM_STATE: the installed default
    assert inst.fast("-i", "1", "-ip", "-g", env={"ASCEND_SIM_STATE": ""}) == (0, b"ipaddr:192.168.100.101\nnetmask:255.255.255.0\n", b"")


def test_bed_mode_link_reads_the_interface(tmp_path):
    inst = Installed(tmp_path)
    bed_state = tmp_path / "bed"
    sim("-q", "init", "--state", bed_state, "--mode", "bed", "--chip", "910B", "--devices", "2", "--hccn-conf", tmp_path / "bed.conf")
    sysfs = tmp_path / "sys"
    (sysfs / "eth0").mkdir(parents=True)
    (sysfs / "eth0" / "carrier").write_text("1\n")
    (sysfs / "eth0" / "operstate").write_text("up\n")
    env = {"ASCEND_SIM_STATE": str(bed_state), "ASCEND_SIM_SYSFS_NET": str(sysfs)}
    inst.python_runs()
    assert inst.same("-i", "0", "-link", "-g", env=env) == (0, b"link status: UP\n", b"")
    assert inst.same("-i", "1", "-link", "-g", env=env) == (0, b"link status: DOWN\n", b"")
    assert inst.python_runs() == 4  # never cached in bed mode (2 x fast + no-fast-path wrapper)
    for cmd in ("-ip", "-mac", "-tls", "-netdetect", "-gateway"):
        inst.python_runs()
        inst.fast("-i", "1", cmd, "-g", env=env)
        assert inst.python_runs() == 0
        assert inst.same("-i", "1", cmd, "-g", env=env)


def test_driver_missing_and_clear(tmp_path):
    inst = Installed(tmp_path)
    inst.host.fault("driver-missing")
    assert not (inst.bin / "hccn_tool").exists()
    inst.host.fault("clear")
    assert (inst.bin / "hccn_tool").read_text().startswith("#!/bin/sh\n")
    inst.python_runs()
    assert inst.same("-i", "0", "-link", "-g") == (0, b"link status: UP\n", b"")


def test_wrapper_passes_shellcheck(tmp_path):
    inst = Installed(tmp_path)
    proc = subprocess.run(["shellcheck", "--shell=sh", str(inst.bin / "hccn_tool")], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout
