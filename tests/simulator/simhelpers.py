"""Helpers for the simulator tests: run the real entry points, make simulated hosts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BIN = REPO / "simulator" / "bin"
ASCEND_SIM = BIN / "ascend-sim"
# The interpreter the simulated tools run on: the system's, as on a server (hccn_facts runs them there).
SYSTEM_PYTHON = "/usr/bin/python3" if os.access("/usr/bin/python3", os.X_OK) else sys.executable
# What hccn_facts asks every device, with -g.
FACTS_QUERIES = ("-ip", "-gateway", "-netdetect", "-net_health", "-link")


def run(argv, env=None, check=False, timeout=60):
    full_env = dict(os.environ)
    full_env.pop("ASCEND_SIM_LATENCY", None)
    if env:
        full_env.update(env)
    proc = subprocess.run([str(a) for a in argv], capture_output=True, text=True, env=full_env, timeout=timeout, check=False)
    if check and proc.returncode != 0:
        raise AssertionError("%s failed (rc=%d)\nstdout:\n%s\nstderr:\n%s" % (argv, proc.returncode, proc.stdout, proc.stderr))
    return proc


def sim(*args, env=None):
    """Run ``ascend-sim ARGS`` and return its stdout (fails the test on a non-zero exit)."""
    return run([ASCEND_SIM, *args], env=env, check=True).stdout


def a3_server(root: Path) -> dict:
    """One simulated A3 server of 16 devices, IPs preset and settled, its tools on SYSTEM_PYTHON, under ``root``/cl:
    its entry of ``ascend-sim cluster``'s answer (``bin_dir``, ``state_dir``, ...)."""
    args = ["--servers", "1", "--chip", "A3", "--devices", "16", "--preset-ips", "--settle", "0", "--python", SYSTEM_PYTHON]
    return json.loads(sim("cluster", "--root", Path(root) / "cl", *args))["servers"][0]


def facts_queries_at_once(server: dict) -> list[tuple[tuple[int, str], subprocess.CompletedProcess]]:
    """hccn_facts' load on ``server``: every device's FACTS_QUERIES (80 on 16 devices) run all at once; each
    ``(device, query)`` with its finished ``hccn_tool`` call."""
    tool = os.path.join(server["bin_dir"], "hccn_tool")
    tasks = [(dev, query) for dev in range(16) for query in FACTS_QUERIES]

    def call(task: tuple[int, str]) -> subprocess.CompletedProcess:
        dev, query = task
        return subprocess.run([tool, "-i", str(dev), query, "-g"], capture_output=True, text=True, check=False)

    with ThreadPoolExecutor(len(tasks)) as pool:
        return list(zip(tasks, pool.map(call, tasks)))


class Host:
    """One simulated host: a state directory, its hccn.conf and (optionally) installed wrappers."""

    def __init__(
        self,
        root: Path,
        name: str,
        chip: str = "910B",
        devices: int | None = None,
        settle: float = 0.0,
        fabric: Path | None = None,
        extra=(),
    ):
        self.name = name
        self.base = root / name
        self.state = self.base / "state"
        self.conf = self.base / "hccn.conf"
        args = ["init", "--state", self.state, "--chip", chip, "--hccn-conf", self.conf, "--settle", str(settle), "--host-id", name]
        if devices is not None:
            args += ["--devices", str(devices)]
        if fabric is not None:
            args += ["--fabric", fabric]
        sim("-q", *args, *extra)

    @property
    def env(self):
        return {"ASCEND_SIM_STATE": str(self.state)}

    def hccn(self, *args, env=None):
        return run([BIN / "hccn_tool", *args], env=dict(self.env, **(env or {})))

    def npu_smi(self, *args, env=None):
        return run([BIN / "npu-smi", *args], env=dict(self.env, **(env or {})))

    def fault(self, *args):
        return sim("-q", "fault", "--state", self.state, *args)

    def ok(self, *args):
        """hccn_tool ARGS must succeed; return stdout."""
        proc = self.hccn(*args)
        assert proc.returncode == 0, (args, proc.stdout, proc.stderr)
        assert proc.stderr == ""
        return proc.stdout

    def set_ip(self, dev, address, netmask="255.255.255.0"):
        assert self.ok("-i", str(dev), "-ip", "-s", "address", address, "netmask", netmask) == "Cmd executed successfully!\n"

    def show(self):
        return json.loads(sim("show", "--state", self.state))

    def conf_lines(self):
        return self.conf.read_text().splitlines()
