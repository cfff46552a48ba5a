"""Names, addresses and paths of one test bed: pure functions, no side effects.

Every name the bed creates is derived here from the bed's prefix, so that ``down`` can find
exactly what ``up`` made and nothing else. Every address lies in 198.18.0.0/15 (RFC 2544
benchmarking space), which the guard route makes unreachable from the real machine.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from pathlib import Path

GUARD_NET = ipaddress.ip_network("198.18.0.0/15")
MGMT_SUPERNET = ipaddress.ip_network("198.18.0.0/16")
DEVICE_SUPERNET = ipaddress.ip_network("198.19.0.0/16")
PREFIX_RE = re.compile(r"^[a-z][a-z0-9]{1,7}$")
MIN_HOSTS, MAX_HOSTS = 2, 16
MIN_DEVICES, MAX_DEVICES = 1, 16
CHIPS = ("910A", "910B", "A3")
IFNAMSIZ = 15  # longest Linux interface name
STATE_ROOT = Path("/var/tmp")
MGMT_IFACE = "mgmt0"  # management NIC inside each host
FABRIC_BRIDGE = "fab0"  # parameter-plane switch inside the fabric netns
SSH_PORT = 22
DEVICE_NETMASK = "255.255.255.0"  # goes with Layout.device_ip()


class LayoutError(ValueError):
    """A bed parameter is out of range; the message says which and what is allowed."""


def check_prefix(prefix: str) -> str:
    if not PREFIX_RE.match(prefix):
        raise LayoutError(f"bad prefix {prefix!r}: use 2-8 characters, a lowercase letter then letters/digits (e.g. ab12cd)")
    return prefix


def state_dir(prefix: str) -> Path:
    return STATE_ROOT / f"ascend-bed-{check_prefix(prefix)}"


@dataclass(frozen=True)
class Layout:
    """Everything about one bed that follows from its parameters."""

    prefix: str
    hosts: int
    devices: int = 8
    chip: str = "910B"
    mgmt_index: int = 0  # third octet of the management /24 inside 198.18.0.0/16

    def __post_init__(self) -> None:
        check_prefix(self.prefix)
        if not MIN_HOSTS <= self.hosts <= MAX_HOSTS:
            raise LayoutError(f"--hosts {self.hosts}: a bed has {MIN_HOSTS} to {MAX_HOSTS} hosts")
        if not MIN_DEVICES <= self.devices <= MAX_DEVICES:
            raise LayoutError(f"--devices {self.devices}: a host has {MIN_DEVICES} to {MAX_DEVICES} NPUs")
        if self.chip not in CHIPS:
            raise LayoutError(f"--chip {self.chip}: choose one of {', '.join(CHIPS)}")
        if not 0 <= self.mgmt_index <= 255:
            raise LayoutError(f"management network index {self.mgmt_index} is outside 0..255")

    @classmethod
    def naming(cls, prefix: str) -> Layout:
        """A layout of the largest shape, for names and paths only (``down`` of any bed)."""
        return cls(prefix, MAX_HOSTS, MAX_DEVICES)

    # -- hosts -----------------------------------------------------------------------------
    @property
    def host_names(self) -> list[str]:
        return [f"h{n}" for n in range(1, self.hosts + 1)]

    @staticmethod
    def host_index(host: str) -> int:
        m = re.match(r"^h([1-9][0-9]*)$", host)
        if not m:
            raise LayoutError(f"bad host name {host!r}: hosts are named h1, h2, ...")
        return int(m.group(1))

    def check_host(self, host: str) -> int:
        n = self.host_index(host)
        if n > self.hosts:
            raise LayoutError(f"bed {self.prefix} has hosts h1..h{self.hosts}, not {host}")
        return n

    def check_device(self, device: int) -> int:
        if not 0 <= device < self.devices:
            raise LayoutError(f"device {device}: hosts of bed {self.prefix} have devices 0..{self.devices - 1}")
        return device

    # -- namespaces and links ----------------------------------------------------------------
    @property
    def netns_prefix(self) -> str:
        """Every netns and every root-namespace link of this bed starts with this."""
        return f"{self.prefix}-"

    def host_netns(self, host: str) -> str:
        return f"{self.prefix}-{host}"

    @property
    def fabric_netns(self) -> str:
        return f"{self.prefix}-fab"

    @property
    def mgmt_bridge(self) -> str:
        return f"{self.prefix}-m"

    def mgmt_veth(self, host: str) -> str:
        """Root-namespace end of a host's management veth (the host end is ``mgmt0``)."""
        return f"{self.prefix}-{host}m"

    @staticmethod
    def device_iface(device: int) -> str:
        """Parameter-plane NIC of NPU ``device`` inside a host."""
        return f"eth{device}"

    @staticmethod
    def fabric_port(host: str, device: int) -> str:
        """Fabric-namespace end of a host's ``eth<device>``; ``cut`` sets it down."""
        return f"{host}e{device}"

    def interface_names(self) -> list[str]:
        names = [self.mgmt_bridge, MGMT_IFACE, FABRIC_BRIDGE]
        for host in self.host_names:
            names.append(self.mgmt_veth(host))
            for dev in range(self.devices):
                names += [self.device_iface(dev), self.fabric_port(host, dev)]
        return names

    # -- addresses --------------------------------------------------------------------------
    @property
    def mgmt_network(self) -> ipaddress.IPv4Network:
        return ipaddress.IPv4Network(f"198.18.{self.mgmt_index}.0/24")

    @property
    def mgmt_gateway(self) -> ipaddress.IPv4Address:
        """The controller's address on the management bridge."""
        return self.mgmt_network.network_address + 1

    def mgmt_ip(self, host: str) -> ipaddress.IPv4Address:
        return self.mgmt_network.network_address + 10 + self.host_index(host)

    def device_ip(self, host: str, device: int) -> ipaddress.IPv4Address:
        """Suggested parameter-plane address: 198.19.<device>.<host index>/24.

        One /24 per device index keeps each host's NICs in different subnets, like the
        910A "SMP" plan, so replies always leave through the NIC that was asked.
        """
        return ipaddress.IPv4Address(f"198.19.{self.check_device(device)}.{self.host_index(host)}")

    # -- files ------------------------------------------------------------------------------
    @property
    def state_dir(self) -> Path:
        return state_dir(self.prefix)

    def host_dir(self, host: str) -> Path:
        return self.state_dir / host

    @property
    def client_key(self) -> Path:
        return self.state_dir / "id_ed25519"

    @property
    def inventory(self) -> Path:
        return self.state_dir / "inventory.yml"

    @property
    def known_hosts(self) -> Path:
        return self.state_dir / "known_hosts"

    @property
    def ssh_config(self) -> Path:
        return self.state_dir / "ssh_config"

    @property
    def control_path_dir(self) -> Path:
        return self.state_dir / "cp"

    @property
    def state_file(self) -> Path:
        return self.state_dir / "state.json"
