"""Fixtures for tests that run modules and playbooks against simulated servers on this machine."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import pytest

from tests.helpers.collection import REPO_ROOT

ASCEND_SIM = REPO_ROOT / "simulator" / "bin" / "ascend-sim"
SIM_INVENTORY = REPO_ROOT / "examples" / "sim" / "inventory.yml"


@dataclass
class SimServer:
    """One simulated server made by ``ascend-sim cluster``."""

    name: str
    bin_dir: Path
    state_dir: Path
    hccn_conf: Path

    @property
    def env(self) -> dict[str, str]:
        """Environment in which ``hccn_tool`` / ``npu-smi`` on PATH are this server's."""
        return {"PATH": f"{self.bin_dir}{os.pathsep}{os.environ.get('PATH', '')}", "ASCEND_SIM_STATE": str(self.state_dir)}

    def hccn_tool(self, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run([str(self.bin_dir / "hccn_tool"), *args], capture_output=True, text=True, check=False)

    def fault(self, *args: str) -> None:
        sim("fault", "--state", str(self.state_dir), *args)

    def show(self) -> dict[str, Any]:
        return json.loads(sim("show", "--state", str(self.state_dir)))

    @contextmanager
    def hold(self, device: int) -> Iterator[subprocess.Popen]:
        """A foreign process that this server's npu-smi lists as holding ``device`` (a leftover run)."""
        env = dict(os.environ, DEVICE_ID=str(device), ASCEND_SIM_STATE=str(self.state_dir))
        proc = subprocess.Popen(["sleep", "600"], env=env, start_new_session=True)
        try:
            yield proc
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


@dataclass
class SimCluster:
    root: Path
    servers: list[SimServer]

    def __getitem__(self, name: str) -> SimServer:
        return next(s for s in self.servers if s.name == name)

    group_port: int = 0

    def inventory(self) -> Path:
        """An inventory of this cluster's servers (server0..N-1, 127.0.1.1..N), written beside it with the embedded
        cluster's group_vars: for clusters of another size than examples/sim/inventory.yml's two servers."""
        path = self.root / "inventory" / "hosts.yml"
        (path.parent / "group_vars").mkdir(parents=True, exist_ok=True)
        shutil.copy(SIM_INVENTORY.parent / "group_vars" / "ascend.yml", path.parent / "group_vars" / "ascend.yml")
        hosts = {s.name: {"ascend_server_id": f"127.0.1.{index + 1}"} for index, s in enumerate(self.servers)}
        path.write_text(json.dumps({"ascend": {"vars": {"ascend_sim_root": str(self.root)}, "hosts": hosts}}))
        return path

    @property
    def inventory_vars(self) -> dict[str, Any]:
        """Extra vars that point examples/sim/inventory.yml at this cluster (and the health report into it, not $HOME).

        Every simulated cluster's server0 is 127.0.1.1 on this one machine, where the tests of both lanes run side by
        side: each cluster's job group listens on a port of its own (a free one the kernel gave, not 29700 for all).
        """
        return {
            "ascend_sim_root": str(self.root),
            "ascend_net_health_summary_file": f"{self.root}/controller/net_health.json",
            "ascend_launch_group_port": self.group_port,
        }


def free_port(address: str = "127.0.1.1") -> int:
    """A TCP port nothing listens on at ``address`` now (the kernel's pick)."""
    with socket.socket() as sock:
        sock.bind((address, 0))
        return int(sock.getsockname()[1])


def sim(*args: str) -> str:
    proc = subprocess.run([sys.executable, str(ASCEND_SIM), *args], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise AssertionError(f"ascend-sim {' '.join(args)} failed (rc={proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc.stdout


@pytest.fixture
def sim_cluster(tmp_path):
    """Factory: ``sim_cluster(servers=2, chip="910B", devices=8, preset_ips=True, **options)``.

    Servers are named server0..serverN-1 like examples/sim/inventory.yml, so playbook tests run
    that inventory with ``extra_vars=cluster.inventory_vars``.
    """
    made: list[Any] = []

    def make(servers: int = 2, chip: str = "910B", devices: int = 8, preset_ips: bool = True, **options: Any) -> SimCluster:
        root = tmp_path / f"cluster{len(made)}"
        args = ["cluster", "--root", str(root), "--servers", str(servers), "--chip", chip, "--devices", str(devices)]
        if preset_ips:
            args.append("--preset-ips")
        options.setdefault("settle", 0)
        for key, value in options.items():
            args += [f"--{key.replace('_', '-')}", str(value)]
        description = json.loads(sim(*args))
        cluster = SimCluster(
            root,
            [SimServer(s["name"], Path(s["bin_dir"]), Path(s["state_dir"]), Path(s["hccn_conf"])) for s in description["servers"]],
            group_port=free_port(),
        )
        made.append(cluster)
        return cluster

    return make


@pytest.fixture
def unreachable_inventory(tmp_path):
    """The simulated cluster's inventory with server1 over SSH at 198.18.255.2, which this machine cannot route to.

    The root route ``unreachable 198.18.0.0/15`` makes the connection fail at once (No route to host):
    server1 is UNREACHABLE to Ansible, as a server whose network is down.
    """
    root = tmp_path / "unreachable"
    (root / "group_vars").mkdir(parents=True)
    shutil.copy(SIM_INVENTORY.parent / "group_vars" / "ascend.yml", root / "group_vars" / "ascend.yml")
    text = SIM_INVENTORY.read_text()
    old = "      ascend_server_id: 127.0.1.2\n"
    assert old in text
    down = old + "      ansible_connection: ssh\n      ansible_host: 198.18.255.2\n      ansible_ssh_common_args: -o ConnectTimeout=3\n"
    (root / "hosts.yml").write_text(text.replace(old, down))
    return root / "hosts.yml"
