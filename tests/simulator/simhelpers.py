"""Helpers for the simulator tests: run the real entry points, make simulated hosts."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BIN = REPO / "simulator" / "bin"
ASCEND_SIM = BIN / "ascend-sim"


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
