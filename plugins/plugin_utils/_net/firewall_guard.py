# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Whether a task would change the controller's own firewall: the firewall role's refusal.

A host reached with the ``local`` connection, or whose address is the loopback, is the machine
running Ansible. Changing its firewall from a play meant for training servers is refused unless
the mode changes nothing or the operator said the controller really is a training server.
Pure function, used by the ``host_firewall`` action plugin on the controller.
"""

from __future__ import annotations

LOCAL_CONNECTION = "local"
LOCAL_ADDRESSES = frozenset(("localhost", "127.0.0.1", "::1"))


def local_refusal(host: str, connection: str, address: str | None, mode: str, *, refuse: bool) -> str | None:
    """The refusal message for ``host``, or None when the task may go ahead.

    ``connection`` is the connection plugin's transport (``local``, ``ssh``, ...); ``address`` the
    address it connects to (``ansible_host``, else the inventory name).
    """
    if not refuse or mode == "none":
        return None
    if connection != LOCAL_CONNECTION and (address or host) not in LOCAL_ADDRESSES:
        return None
    return (
        f"{host} is reached with the local connection: the firewall role would change this machine's own firewall. "
        "Set ascend_firewall_mode=none for simulated local clusters, or ascend_firewall_allow_local=true if this "
        "machine really is a training server."
    )
