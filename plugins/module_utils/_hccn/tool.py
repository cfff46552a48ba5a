# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one client for ``hccn_tool``: knows the binary, the timeout and the exit-code table.

Every call goes through :meth:`HccnTool.run` (``_command.run``: an argument list, never a shell
string, with a timeout). :meth:`HccnTool.query` turns an answer into stdout or a classified
:class:`HccnError`; the typed ``get_*`` helpers add the parsers of ``_hccn.parse``. Methods are
safe to call from worker threads: they never call ``fail_json`` themselves.

Runs on target hosts: Python 3.8+, stdlib only.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

from ansible_collections.ascend.cluster.plugins.module_utils import _command
from ansible_collections.ascend.cluster.plugins.module_utils._hccn import parse

if TYPE_CHECKING:
    from typing import Any, Callable, Iterable

DEFAULT_PATH = "/usr/local/Ascend/driver/tools/hccn_tool"
DEFAULT_TIMEOUT = _command.DEFAULT_TIMEOUT
# How often a get command is asked when it returns nothing at all (see HccnTool._get).
GET_ATTEMPTS = 3

# Outcome kinds of one call (see HccnError.kind).
UNSET = "unset"  # the value was never configured: a normal state, not a failure
DEVICE = "device"  # this device answered with an error: reported per device
USAGE = "usage"  # the driver rejected the command itself (old driver, bad arguments)
MISSING = "missing"  # the binary cannot be executed at all

# The reference's exit-code table: (stderr text, kind). Matched case-insensitively on stderr.
ERROR_TABLE = (
    ("no gateway was preset", UNSET),
    ("no ip was preset", UNSET),
    ("Get invalid device id", DEVICE),
    ("Command execute failed", DEVICE),
    ("Get unknown option", USAGE),
    ("The total count of input parameters is wrong", USAGE),
)


class HccnResult:
    """The raw answer of one ``hccn_tool`` call."""

    def __init__(self, cmd: list, rc: int, stdout: str, stderr: str) -> None:
        self.cmd = cmd
        self.rc = rc
        self.stdout = stdout
        self.stderr = stderr

    def __repr__(self):
        return "HccnResult(rc=%r, stdout=%r, stderr=%r)" % (self.rc, self.stdout, self.stderr)


class HccnError(Exception):
    """A call that did not return data; ``kind`` says what it means (UNSET, DEVICE, USAGE, MISSING)."""

    def __init__(self, kind: str, result: HccnResult, reason: str) -> None:
        self.kind = kind
        self.result = result
        self.reason = reason
        super().__init__(reason)

    @property
    def stderr(self) -> str:
        return self.result.stderr.strip()


def classify(result: HccnResult) -> HccnError | None:
    """Map rc/stderr to an outcome: None for success, else an HccnError saying what it means."""
    if result.rc == 0:
        return None
    err = result.stderr.lower()
    for text, kind in ERROR_TABLE:
        if text.lower() in err:
            return HccnError(kind, result, result.stderr.strip())
    if result.rc == _command.TIMEOUT_RC:
        return HccnError(
            DEVICE,
            result,
            "no answer within the timeout (rc=%d): the device or its driver may be hung; check dmesg, or raise the timeout" % result.rc,
        )
    if result.rc in (126, 127):
        return HccnError(MISSING, result, "cannot execute %s (rc=%d)" % (result.cmd[0], result.rc))
    return HccnError(DEVICE, result, result.stderr.strip() or "exit code %d without message" % result.rc)


class HccnTool(_command.ToolClient):
    """Client for one ``hccn_tool`` binary on this host."""

    def command(self, device: int | None, args: list) -> list:
        """The argument list for ``hccn_tool -i <device> <args>`` (``-a`` when device is None)."""
        target = ["-a"] if device is None else ["-i", str(int(device))]
        return [self.binary] + target + [str(a) for a in args]

    def run(self, device: int | None, args: list) -> HccnResult:
        """Run one call and return its raw answer; never raises for a failing command."""
        cmd = self.command(device, args)
        try:
            rc, out, err = self.runner(list(cmd), timeout=self.timeout)
        except OSError as exc:
            return HccnResult(cmd, 127, "", "%s: %s" % (self.binary, exc))
        return HccnResult(cmd, rc, out or "", err or "")

    def query(self, device: int | None, args: list) -> str:
        """Run a get command and return stdout, or raise the classified HccnError."""
        result = self.run(device, args)
        error = classify(result)
        if error is not None:
            raise error
        return result.stdout

    def _get(self, device, args, parser, unset):
        # A get command always prints data, so rc 0 with nothing at all on stdout and stderr is
        # not an answer. It was seen under heavy load while calls went through run_command
        # (ansible/ansible#51393, its select loop can miss a late child's output); _command.run
        # reads to EOF, but a lost answer costs a device, so ask again, then give up with the
        # empty answer, which the parser rejects with the raw text.
        for attempt in range(GET_ATTEMPTS):
            result = self.run(device, args)
            if result.rc != 0 or result.stdout.strip() or result.stderr.strip() or attempt == GET_ATTEMPTS - 1:
                break
        error = classify(result)
        if error is not None:
            if error.kind == UNSET:
                return unset
            raise error
        return parser(result.stdout)

    def get_ip(self, device: int) -> dict:
        """``{"address", "netmask", "ips"}``; empty values when no IP was ever set."""
        return self._get(device, ["-ip", "-g"], parse.parse_ip, {"address": "", "netmask": "", "ips": []})

    def get_gateway(self, device: int) -> str:
        """The default gateway, ``""`` when none is set (rc 2, a normal state)."""
        return self._get(device, ["-gateway", "-g"], parse.parse_gateway, {"gateway": "", "iface": ""})["gateway"]

    def get_netdetect(self, device: int) -> str:
        """The netdetect address, ``""`` when unset (``0.0.0.0``)."""
        return self._get(device, ["-netdetect", "-g"], parse.parse_netdetect, "")

    def get_net_health(self, device: int) -> str:
        """The raw `net health status` value (``Success``, ``Init``, ``Receive timeout``, ...)."""
        return self._get(device, ["-net_health", "-g"], parse.parse_net_health, "")

    def get_link(self, device: int) -> str:
        """``"UP"`` or ``"DOWN"``."""
        return self._get(device, ["-link", "-g"], parse.parse_link, "")

    def get_tls(self, device: int) -> dict:
        """``{"tls_switch", "tls_preconfigured", "tls_alarm_days"}``."""
        return self._get(device, ["-tls", "-g"], parse.parse_tls, {})

    def get_mac(self, device: int) -> str:
        """The device NIC's MAC address."""
        return self._get(device, ["-mac", "-g"], parse.parse_mac, "")

    def ping(self, device: int, address: str) -> dict:
        """``-ping -g address X`` from ``device``: :func:`parse.parse_ping`'s counts.

        Lost packets fail the command (``Command execute failed!``) after it printed its summary:
        that is an answer (the counts), not an error. Without a summary the call is classified.
        """
        result = self.run(device, ["-ping", "-g", "address", address])
        if parse.PING_SUMMARY.search(result.stdout):
            return parse.parse_ping(result.stdout)
        error = classify(result)
        if error is not None:
            raise error
        return parse.parse_ping(result.stdout)


def pool_map(func: Callable[[Any], Any], items: Iterable, parallel: int) -> list:
    """``[func(item), or the HccnError / ParseError it raised]`` for every item, in order.

    Runs on a thread pool of at most ``parallel`` workers: hccn_tool calls are slow on real
    hardware, so callers hand over every (device, command) pair at once.
    """
    items = list(items)
    if not items:
        return []

    def guarded(item):
        try:
            return func(item)
        except (HccnError, parse.ParseError) as exc:
            return exc

    with ThreadPoolExecutor(max_workers=max(1, min(parallel, len(items)))) as pool:
        return list(pool.map(guarded, items))


def find_binary(module: _command.BinFinder, explicit: str | None = None) -> str | None:
    """Path of hccn_tool: ``explicit`` if given (None if not executable), else PATH, else DEFAULT_PATH."""
    if explicit:
        if os.sep not in explicit:
            return module.get_bin_path(explicit) or None
        return explicit if _is_executable(explicit) else None
    found = module.get_bin_path("hccn_tool", opt_dirs=[os.path.dirname(DEFAULT_PATH)])
    return found or None


def _is_executable(path: str) -> bool:
    return os.path.isfile(path) and os.access(path, os.X_OK)


def not_found_msg(explicit: str | None) -> str:
    """What to fix when :func:`find_binary` found no hccn_tool (``explicit``: the module's option)."""
    if explicit:
        return "hccn_tool=%s is not an executable file: fix the path, or leave the option unset to search PATH and %s" % (
            explicit,
            DEFAULT_PATH,
        )
    return "hccn_tool not found on PATH nor at %s: install the Ascend NPU driver, which provides it, or set the hccn_tool option" % (
        DEFAULT_PATH
    )
