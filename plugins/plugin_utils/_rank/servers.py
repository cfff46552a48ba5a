# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Turn per-host ``hccn_facts`` results into the ``servers`` list the rank-table filters take."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any


class ServersError(ValueError):
    """A host cannot be turned into a server entry; the message says which and why."""


DEVICE_KEYS = ("device_id", "device_ip", "netmask", "gateway", "link", "net_health", "stale_conf", "error")


def _host_name(hostvars: Mapping[str, Any]) -> str:
    return str(hostvars.get("inventory_hostname") or hostvars.get("ansible_host") or "?")


def _facts_of(hostvars: Mapping[str, Any], facts_key: str) -> Any:
    """The host's ``ansible_facts[facts_key]``.

    Only ``ansible_facts`` is read: the same fact injected as a top-level variable is gone when
    ``INJECT_FACTS_AS_VARS`` is off (the default from ansible-core 2.24) and reading it warns before.
    """
    facts = hostvars.get("ansible_facts")
    return facts.get(facts_key) if isinstance(facts, Mapping) else None


def server_from_hostvars(hostvars: Mapping[str, Any], facts_key: str = "ascend_npu") -> dict[str, Any]:
    """One server entry from one host's variables.

    ``server_id`` is ``ascend_server_id`` when set, else ``ansible_host``, else the inventory name:
    MindSpore documents it as the host's IP address, so inventories that address hosts by name
    should set ``ascend_server_id``.
    """
    name = _host_name(hostvars)
    facts = _facts_of(hostvars, facts_key)
    if not isinstance(facts, Mapping) or "devices" not in facts:
        raise ServersError(
            f"host {name} has no '{facts_key}' facts (ansible_facts.{facts_key}): run ascend.cluster.hccn_facts "
            "on it first (or include it in the play that gathers them)"
        )
    server_id = hostvars.get("ascend_server_id") or hostvars.get("ansible_host") or name
    devices = []
    for dev in facts.get("devices") or []:
        if not isinstance(dev, Mapping) or "device_id" not in dev:
            raise ServersError(f"host {name}: malformed device entry {dev!r} in '{facts_key}.devices'")
        entry = {key: dev[key] for key in DEVICE_KEYS if key in dev}
        entry["device_id"] = int(dev["device_id"])
        entry["device_ip"] = str(dev.get("device_ip") or "")
        devices.append(entry)
    devices.sort(key=lambda d: d["device_id"])
    server: dict[str, Any] = {
        "server_id": str(server_id),
        "host": name,
        "chip": facts.get("chip"),
        "devices": devices,
    }
    if facts.get("chip_problem") and not facts.get("chip"):
        server["chip_problem"] = str(facts["chip_problem"])  # npu-smi printed a chip that is not clear: the rank plan refuses
    host_ip = hostvars.get("ascend_host_ip") or hostvars.get("ansible_host")
    if host_ip:
        server["host_ip"] = str(host_ip)
    _add_superpod(server, hostvars, name)
    return server


def _add_superpod(server: dict[str, Any], hostvars: Mapping[str, Any], name: str) -> None:
    """A3 SuperPoD ids (rank table 1.2) from inventory: ``ascend_super_pod_id`` for the server,
    ``ascend_super_device_ids`` (``{device_id: super_device_id}``) for its devices.

    ``hccn_facts`` does not read them (the reference documents no tool output for them), so an A3
    inventory states them, as MindX's cluster configuration does.
    """
    pod = hostvars.get("ascend_super_pod_id")
    if pod is not None and str(pod) != "":
        server["super_pod_id"] = str(pod)
    ids = hostvars.get("ascend_super_device_ids")
    if ids is None:
        return
    if not isinstance(ids, Mapping):
        raise ServersError(f"host {name}: ascend_super_device_ids must map device ids to super_device_ids, got {ids!r}")
    by_device = {}
    for key, value in ids.items():
        try:
            device_id = int(key)
        except (TypeError, ValueError):
            raise ServersError(f"host {name}: ascend_super_device_ids has a key {key!r} that is not a device id") from None
        by_device[device_id] = str(value)
    known = {dev["device_id"] for dev in server["devices"]}
    unknown = sorted(set(by_device) - known)
    if unknown:
        raise ServersError(f"host {name}: ascend_super_device_ids names devices {unknown} the host does not report")
    for dev in server["devices"]:
        if dev["device_id"] in by_device:
            dev["super_device_id"] = by_device[dev["device_id"]]


def servers_from_hostvars(hosts: Iterable[Mapping[str, Any]], facts_key: str = "ascend_npu") -> list[dict[str, Any]]:
    """Server entries for every host, in the order given."""
    if isinstance(hosts, Mapping):
        raise ServersError(
            "servers_from_facts expects a list of host variables, e.g. ansible_play_hosts | map('extract', hostvars); got a mapping"
        )
    servers = [server_from_hostvars(h, facts_key) for h in hosts]
    if not servers:
        raise ServersError("servers_from_facts got no hosts: is the play's host list empty?")
    return servers
