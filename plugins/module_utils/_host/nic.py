# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The host NIC HCCL uses for its host-side sockets: ``HCCL_IF_IP`` and ``HCCL_SOCKET_IFNAME``.

HCCL binds its host sockets to ``HCCL_IF_IP`` (else the NIC ``HCCL_SOCKET_IFNAME`` names, which has the
lower priority; reference section 4). An address that is not this server's - a NAT'd or jump
``ansible_host`` copied into the rank table's ``server_id`` - fails only inside HCCL, as a socket
error or EI0006 on every rank. The pre-flight checks it first, on the server:

- with a NIC chosen in the inventory (``ascend_launch_nic``): the NIC must exist and have an IPv4
  address, which becomes ``HCCL_IF_IP`` (an explicit ``ascend_launch_host_ip`` must be that address);
- without one: ``HCCL_IF_IP`` must be an address this server can bind.

Runs on target hosts: Python 3.8+, stdlib only (Linux: ``SIOCGIFADDR``).
"""

from __future__ import annotations

import errno
import fcntl
import ipaddress
import socket
import struct
from typing import Callable

SIOCGIFADDR = 0x8915  # linux/sockios.h: the NIC's (primary) IPv4 address


def nic_names() -> list:
    """This server's NIC names (``lo`` included)."""
    return [name for _index, name in socket.if_nameindex()]


def nic_address(name: str) -> str | None:
    """The IPv4 address of NIC ``name``, None when it has none."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        try:
            packed = fcntl.ioctl(sock.fileno(), SIOCGIFADDR, struct.pack("256s", name.encode()[:15]))
        except OSError:
            return None
    return socket.inet_ntoa(packed[20:24])


def is_local_address(address: str) -> bool:
    """Whether a socket on this server can bind ``address`` (any port): it is one of its addresses."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((address, 0))
        except OSError as exc:
            if exc.errno == errno.EADDRNOTAVAIL:
                return False
            raise
    return True


def _ipv4(value: str) -> bool:
    try:
        ipaddress.IPv4Address(value)
    except ValueError:
        return False
    return True


def resolve(
    nic: str,
    host_ip: str,
    names: Callable[[], list] = nic_names,
    address_of: Callable[[str], str | None] = nic_address,
    is_local: Callable[[str], bool] = is_local_address,
) -> dict:
    """``{"host_ip", "nic", "problem"}``: the HCCL_IF_IP / HCCL_SOCKET_IFNAME to use, or what is wrong."""
    if nic:
        known = names()
        if nic not in known:
            return dict(host_ip=host_ip, nic=nic, problem="no NIC %s (its NICs: %s); fix ascend_launch_nic" % (nic, ", ".join(known)))
        address = address_of(nic)
        if not address:
            return dict(
                host_ip=host_ip, nic=nic, problem="NIC %s has no IPv4 address; give it one, or choose another ascend_launch_nic" % nic
            )
        if host_ip and host_ip != address:
            return dict(
                host_ip=host_ip,
                nic=nic,
                problem="ascend_launch_host_ip %s is not the address of NIC %s (%s); unset one of the two" % (host_ip, nic, address),
            )
        return dict(host_ip=address, nic=nic, problem=None)
    if host_ip and _ipv4(host_ip) and not is_local(host_ip):
        return dict(
            host_ip=host_ip,
            nic="",
            problem=(
                "HCCL_IF_IP %s (the rank table's server_id, or ascend_launch_host_ip) is not an address of this server, so HCCL "
                "could not bind its sockets; set ascend_launch_host_ip to this server's own address on the cluster network, "
                "or name its NIC with ascend_launch_nic" % host_ip
            ),
        )
    return dict(host_ip=host_ip, nic="", problem=None)
