"""A device as hccn_facts reports it (``ansible_facts.ascend_npu.devices[]``), healthy unless told otherwise."""

from __future__ import annotations

from typing import Any


def device_facts(device_id: int, device_ip: str, netmask: str, gateway: str) -> dict[str, Any]:
    """A healthy device probing its gateway (netdetect = gateway); a test puts its changes on top (``{**entry, **changes}``)."""
    return {
        "device_id": device_id,
        "device_ip": device_ip,
        "netmask": netmask,
        "gateway": gateway,
        "netdetect": gateway,
        "net_health": "Success",
        "link": "UP",
        "error": None,
        "stale_conf": False,
        "stale_keys": [],
        "tls_switch": False,
    }
