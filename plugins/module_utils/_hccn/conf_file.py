# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Read ``/etc/hccn.conf`` and cross-check it against what a device reports.

The file holds one ``key_<phy_id>=value`` per line (``address_0=192.168.100.101``). ``hccn_tool``
appends a changed key at the end, so for a repeated key the last line wins. The device is the
truth; the file is only the fallback when ``hccn_tool`` is missing, and the cross-check otherwise.

Runs on target hosts: Python 3.8+, stdlib only.
"""

from __future__ import annotations

import re

from ansible_collections.ascend.cluster.plugins.module_utils._hccn.parse import UNSET_ADDRESS

DEFAULT_PATH = "/etc/hccn.conf"
_LINE = re.compile(r"^\s*(?P<key>[A-Za-z][A-Za-z0-9_]*?)_(?P<device>\d+)\s*=\s*(?P<value>.*?)\s*$")

# device fact -> hccn.conf key, for the fields both sides know.
CROSS_CHECKED = (
    ("device_ip", "address"),
    ("netmask", "netmask"),
    ("gateway", "gateway"),
    ("netdetect", "netdetect"),
)


def parse_conf(text: str) -> dict:
    """``{device_id: {key: value}}``; comments, blank and malformed lines are ignored; last wins."""
    devices: dict = {}
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        match = _LINE.match(line)
        if match:
            devices.setdefault(int(match.group("device")), {})[match.group("key")] = match.group("value")
    return devices


def read_conf(path: str) -> dict | None:
    """Parsed content of ``path``, or None when the file does not exist (OSError otherwise)."""
    try:
        with open(path) as handle:
            return parse_conf(handle.read())
    except FileNotFoundError:
        return None


def _address(value: str | None) -> str:
    value = (value or "").strip()
    return "" if value == UNSET_ADDRESS else value


def facts_from_conf(conf: dict) -> dict:
    """The device facts the file claims for one device: device_ip, netmask, gateway, netdetect."""
    return dict((fact, _address(conf.get(key))) for fact, key in CROSS_CHECKED)


def stale_keys(device_facts: dict, conf: dict) -> list:
    """hccn.conf keys whose value differs from what the device reports (unset == missing == 0.0.0.0).

    Facts the device could not report (None) are not compared.
    """
    claimed = facts_from_conf(conf)
    stale = []
    for fact, key in CROSS_CHECKED:
        actual = device_facts.get(fact)
        if actual is None:
            continue
        if _address(actual) != claimed[fact]:
            stale.append(key)
    return stale


# hccn.conf key -> the field of an hccn_config device state (and the hccn_tool set that writes it).
STATE_FIELDS = (("address", "address"), ("netmask", "netmask"), ("gateway", "gateway"), ("netdetect", "netdetect"))


def state_stale_keys(state: dict, conf: dict) -> list:
    """:func:`stale_keys` for an hccn_config device state (``address``/``netmask``/``gateway``/``netdetect``).

    Fields the state does not hold (not read) are not compared.
    """
    facts = {"device_ip": state.get("address"), "netmask": state.get("netmask")}
    facts.update(gateway=state.get("gateway"), netdetect=state.get("netdetect"))
    return stale_keys(facts, conf)


def rewritten(text: str, items: list) -> str:
    """``text`` after hccn_tool set each ``(key, value)`` in order: the key's lines deleted, ``key=value`` appended.

    What the driver does on every set (reference: it deletes the existing line for that key and
    appends the new one at the end, so key order drifts); used to show the file a check run would leave.
    """
    lines = text.splitlines()
    for key, value in items:
        lines = [line for line in lines if line.split("=", 1)[0].strip() != key]
        lines.append("%s=%s" % (key, value))
    return "\n".join(lines) + "\n" if lines else ""
