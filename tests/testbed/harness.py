"""Drive ``bed.py`` from tests exactly as a person would: through its command line."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

BED_PY = Path(__file__).resolve().with_name("bed.py")

# prepare.yml's plan for a bed (tests/testbed/test_prepare.py proves it, bench/bench_prepare.py
# times it): A2 (910B) AMP layout, every device in one subnet inside 198.18.0.0/15 (the
# simulator refuses other addresses in bed mode); no gateway answers on the bed's fabric, so
# each device probes the same device of the next server (seed 001).
PREPARE_VARS = {
    "ascend_device_ip_layout": "amp",
    "ascend_device_ip_networks": ["198.19.0.0/24"],
    "ascend_device_ip_first_host": 11,
    "ascend_net_health_netdetect": "peer",
    "ascend_firewall_mode": "open_ports",
}


def unique_prefix() -> str:
    """``ab`` + 4 hex digits: short enough for interface names, unlikely to collide."""
    return "ab" + secrets.token_hex(2)


def bed_cli(*args: str, check: bool = True, timeout: float = 120) -> subprocess.CompletedProcess:
    """Run ``bed.py ARGS...``; on failure raise with its output so the test log shows why."""
    proc = subprocess.run([sys.executable, str(BED_PY), *args], capture_output=True, text=True, timeout=timeout, check=False)
    if check and proc.returncode != 0:
        raise AssertionError(f"bed.py {' '.join(args)} exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
    return proc


def bed_status(prefix: str) -> dict:
    return json.loads(bed_cli("status", "--prefix", prefix, "--json", check=False).stdout)


@dataclass
class Bed:
    """A running bed as tests see it."""

    prefix: str
    state: dict = field(default_factory=dict)

    @classmethod
    def up(cls, prefix: str, hosts: int, *extra: str) -> Bed:
        bed_cli("up", "--hosts", str(hosts), "--prefix", prefix, *extra)
        return cls(prefix, bed_status(prefix)["state"])

    def down(self) -> None:
        bed_cli("down", "--prefix", self.prefix)

    @property
    def inventory(self) -> Path:
        return Path(self.state["inventory"])

    @property
    def hosts(self) -> list[str]:
        return sorted(self.state["pids"])

    def mgmt_ip(self, host: str) -> str:
        return self.state["mgmt_ips"][host]

    def exec(self, host: str, *command: str, check: bool = True) -> subprocess.CompletedProcess:
        """Run ``command`` inside ``host`` (its net, mount and UTS namespaces)."""
        return bed_cli("exec", "--prefix", self.prefix, host, "--", *command, check=check)

    def set_device_ips(self, hosts: list[str] | None = None, devices: int = 8) -> None:
        """Device IPs 198.19.<device>.<host's index on the bed, from 1>/24 on ``hosts`` (default every host), through each
        host's hccn_tool: the addresses the launch tests' rank tables name."""
        for host in hosts or self.hosts:
            index = self.hosts.index(host) + 1
            for device in range(devices):
                self.exec(
                    host, "hccn_tool", "-i", str(device), "-ip", "-s", "address", f"198.19.{device}.{index}", "netmask", "255.255.255.0"
                )

    def cut(self, host: str, device: int) -> None:
        bed_cli("cut", "--prefix", self.prefix, host, str(device))

    def restore(self, host: str, device: int) -> None:
        bed_cli("restore", "--prefix", self.prefix, host, str(device))

    def mgmt_down(self, host: str) -> None:
        """Take ``host``'s management link down: to the controller it is a host that died."""
        bed_cli("mgmt-down", "--prefix", self.prefix, host)

    def mgmt_up(self, host: str) -> None:
        bed_cli("mgmt-up", "--prefix", self.prefix, host)

    @contextmanager
    def dead(self, host: str) -> Iterator[None]:
        """``host`` has died (its management link down) for the ``with`` block, and is back after it, whatever happened."""
        self.mgmt_down(host)
        try:
            yield
        finally:
            self.mgmt_up(host)

    def clock(self, host: str, seconds: int) -> None:
        """Run ``host``'s sessions opened from now on ``seconds`` off the real time (libfaketime; 0 undoes it)."""
        bed_cli("clock", "--prefix", self.prefix, host, str(seconds))


@contextmanager
def run_root(name: str) -> Iterator[Path]:
    """A directory for a bed's runs (run directories, the controller's job files) on /var/tmp, which every bed host
    shares with this machine; removed with what the tests left in it once they are done."""
    root = Path(tempfile.mkdtemp(prefix=f"{name}-", dir="/var/tmp"))
    try:
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


def leftovers(prefix: str) -> list[str]:
    """Anything of bed ``prefix`` still on this machine: namespaces, links, processes, files."""
    status = bed_status(prefix)
    found = list(status["objects"])
    marker = f"/ascend-bed-{prefix}/".encode()
    for proc_dir in Path("/proc").iterdir():
        if proc_dir.name.isdigit():
            try:
                if marker in (proc_dir / "cmdline").read_bytes():
                    found.append(f"process {proc_dir.name}")
            except OSError:
                pass
    if os.path.exists(f"/var/tmp/ascend-bed-{prefix}"):
        found.append(f"/var/tmp/ascend-bed-{prefix}")
    return found


def net_health(bed: Bed, host: str, device: int = 0) -> str:
    """The simulated ``hccn_tool -i DEVICE -net_health -g`` answer on ``host``."""
    return bed.exec(host, "hccn_tool", "-i", str(device), "-net_health", "-g", check=False).stdout.strip()


def wait_health(bed: Bed, wanted: dict, timeout: float = 20.0, device: int = 0) -> dict:
    """Poll until every host in ``wanted`` reports its wanted answer (or time runs out); what was seen."""
    deadline = time.monotonic() + timeout
    while True:
        seen = {h: net_health(bed, h, device) for h in wanted}
        if seen == wanted or time.monotonic() > deadline:
            return seen
        time.sleep(0.5)
