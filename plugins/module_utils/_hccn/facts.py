# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Gather ``ascend_npu`` facts: device list, concurrent ``hccn_tool`` queries, hccn.conf cross-check.

Used by the ``hccn_facts`` module. Everything that must stop the module raises :class:`FactsError`
(message saying what to fix, plus raw output); the module turns it into ``fail_json``. An answer a parser
cannot read (a driver's variant not seen yet) stops nothing: that device's fields of the query are unknown
(None), the answer is kept in its ``unparsed`` and named in a warning, and the gate that needs the field
decides (``plugin_utils/_net/net_health``).

Runs on target hosts: Python 3.8+, stdlib only.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

from ansible_collections.ascend.cluster.plugins.module_utils._hccn import conf_file as _hccn_conf
from ansible_collections.ascend.cluster.plugins.module_utils._hccn import tool as _hccn_tool
from ansible_collections.ascend.cluster.plugins.module_utils._hccn.parse import ParseError
from ansible_collections.ascend.cluster.plugins.module_utils._npu import chip as _chip
from ansible_collections.ascend.cluster.plugins.module_utils._npu import smi as _npu_smi
from ansible_collections.ascend.cluster.plugins.module_utils._npu import versions as _sw_versions

if TYPE_CHECKING:
    from typing import Any

# query name -> HccnTool getter. The first five are always gathered; the rest via `gather`.
BASE_QUERIES = ("ip", "gateway", "netdetect", "net_health", "link")
EXTRA_QUERIES = ("tls", "mac")
_GETTERS = {
    "ip": "get_ip",
    "gateway": "get_gateway",
    "netdetect": "get_netdetect",
    "net_health": "get_net_health",
    "link": "get_link",
    "tls": "get_tls",
    "mac": "get_mac",
}


# query -> the device facts it gives; an answer the parser cannot read leaves them None (unknown).
QUERY_FIELDS = {
    "ip": ("device_ip", "netmask", "ips"),
    "gateway": ("gateway",),
    "netdetect": ("netdetect",),
    "net_health": ("net_health",),
    "link": ("link",),
    "tls": ("tls_switch", "tls_preconfigured", "tls_alarm_days"),
    "mac": ("mac",),
}
# How much of an unreadable answer the facts keep (a driver's answer is a line or two).
RAW_LIMIT = 300


class FactsError(Exception):
    """Stop the module: ``msg`` says what to fix, ``details`` carries raw cmd/rc/stdout/stderr."""

    def __init__(self, msg: str, **details: Any) -> None:
        self.msg = msg
        self.details = details
        super().__init__(msg)


def query_devices(tool: _hccn_tool.HccnTool, devices: list, queries: tuple, parallel: int) -> dict:
    """Run every (device, query) pair on a bounded thread pool.

    Returns ``{(device, query): value, HccnError or ParseError}`` for per-device outcomes: an answer that cannot be
    parsed (a driver's variant not seen yet) is that field's alone, never the host's (:func:`device_from_answers`).
    Raises FactsError for answers that concern the whole host (the driver rejects the command, the binary cannot run).
    """
    tasks = [(device, query) for device in devices for query in queries]
    values = _hccn_tool.pool_map(lambda task: getattr(tool, _GETTERS[task[1]])(task[0]), tasks, parallel)
    answers = dict(zip(tasks, values))
    for (_device, query), value in sorted(answers.items(), key=lambda item: item[0]):
        if isinstance(value, _hccn_tool.HccnError) and value.kind in (_hccn_tool.USAGE, _hccn_tool.MISSING):
            hint = (
                "drop %r from the gather option or upgrade the Ascend driver" % query
                if query in EXTRA_QUERIES
                else "check that %s is the Ascend driver's hccn_tool" % tool.binary
            )
            raise FactsError(
                "%s rejected %s: %s; %s" % (tool.binary, " ".join(value.result.cmd), value.reason, hint),
                cmd=value.result.cmd,
                rc=value.result.rc,
                stdout=value.result.stdout,
                stderr=value.result.stderr,
            )
    return answers


def raw_answer(error: ParseError) -> str:
    """What the driver printed, as one line for a warning: stripped, lines joined by `` / ``, at most :data:`RAW_LIMIT`."""
    text = " / ".join(line.strip() for line in error.raw.strip().splitlines() if line.strip())
    return text if len(text) <= RAW_LIMIT else text[:RAW_LIMIT] + "..."


def device_from_answers(device: int, answers: dict, queries: tuple, conf: dict | None) -> dict:
    """One ``devices`` entry from the device's answers, cross-checked against its hccn.conf keys."""
    entry: dict = {
        "device_id": device,
        "device_ip": None,
        "netmask": None,
        "ips": None,
        "gateway": None,
        "netdetect": None,
        "net_health": None,
        "link": None,
        "error": None,
        "unparsed": {},
    }
    for query in queries:
        value = answers[(device, query)]
        if isinstance(value, _hccn_tool.HccnError):
            if entry["error"] is None:
                entry["error"] = value.stderr or value.reason
            continue
        if isinstance(value, ParseError):
            # A variant this collection cannot read: its fields are unknown, the raw answer is kept; the gate
            # that needs the field decides (_net_health fails the device closed, naming field and answer).
            entry.update(dict.fromkeys(QUERY_FIELDS[query]))
            entry["unparsed"][query] = raw_answer(value)
            continue
        if query == "ip":
            entry.update(device_ip=value["address"], netmask=value["netmask"], ips=value["ips"])
        elif query == "tls":
            entry.update(value)
        else:
            entry[query] = value
    _cross_check(entry, conf)
    return entry


def _cross_check(entry: dict, conf: dict | None) -> None:
    if conf is None:  # no hccn.conf to compare with
        entry.update(conf={}, stale_conf=False, stale_keys=[])
        return
    own = conf.get(entry["device_id"], {})
    keys = _hccn_conf.stale_keys(entry, own)
    entry.update(conf=own, stale_conf=bool(keys), stale_keys=keys)


def device_from_conf(device: int, conf: dict) -> dict:
    """One ``devices`` entry from hccn.conf alone (fallback when hccn_tool is missing)."""
    own = conf.get(device, {})
    entry: dict = {"device_id": device, "net_health": None, "link": None, "error": None, "unparsed": {}}
    entry.update(_hccn_conf.facts_from_conf(own))
    entry["ips"] = [{"address": entry["device_ip"], "netmask": entry["netmask"]}] if entry["device_ip"] else []
    entry.update(conf=own, stale_conf=False, stale_keys=[])
    return entry


def validate_params(params: dict) -> None:
    """Checks the argument spec cannot express (ranges, duplicates)."""
    if params["parallel"] < 1:
        raise FactsError("parallel must be 1 or more (got %d)" % params["parallel"])
    if params["timeout"] < 1:
        raise FactsError("timeout must be 1 second or more (got %d)" % params["timeout"])
    devices = params.get("devices")
    if devices is not None:
        bad = [d for d in devices if d < 0 or d > _chip.ANY_CHIP_MAX_DEVICE_ID]
        if bad:
            raise FactsError(
                "devices %s out of range: physical device ids go from 0 to %d (see `npu-smi info -l`)" % (bad, _chip.ANY_CHIP_MAX_DEVICE_ID)
            )
        if len(set(devices)) != len(devices):
            raise FactsError("devices lists an id more than once: %s" % devices)


def _attempt(func):
    """(result, None) or (None, the npu-smi exception it raised)."""
    try:
        return func(), None
    except (_npu_smi.NpuSmiError, _npu_smi.NpuSmiParseError) as exc:
        return None, exc


class Gatherer:
    """Collects the facts for one host; ``warnings`` accumulates what the operator should know."""

    def __init__(self, module, runner=None):
        self.module = module
        self.params = module.params
        # How hccn_tool / npu-smi are run (None: _command.run); tests hand in a fake one.
        self.runner = runner
        self.warnings: list = []
        self.table: list | None = None
        self.driver_version: str | None = None

    def warn(self, msg: str) -> None:
        self.warnings.append(msg)

    def find_tools(self) -> tuple:
        hccn = _hccn_tool.find_binary(self.module, self.params["hccn_tool"])
        if self.params["hccn_tool"] and hccn is None:
            raise FactsError(
                "hccn_tool=%s is not an executable file: fix the path or leave the option unset to search PATH "
                "and %s" % (self.params["hccn_tool"], _hccn_tool.DEFAULT_PATH)
            )
        npu = _npu_smi.find_binary(self.module, self.params["npu_smi"])
        if self.params["npu_smi"] and npu is None:
            raise FactsError(
                "npu_smi=%s is not an executable file: fix the path or leave the option unset to search PATH and %s"
                % (self.params["npu_smi"], ", ".join(_npu_smi.INSTALL_DIRS))
            )
        return hccn, npu

    def read_conf(self) -> dict | None:
        path = self.params["hccn_conf"]
        try:
            return _hccn_conf.read_conf(path)
        except (OSError, UnicodeDecodeError) as exc:
            self.warn("cannot read %s (%s): hccn.conf cross-check skipped" % (path, exc))
            return None

    def discover(self, npu_smi: str | None) -> tuple:
        """(device ids, where they came from); keeps the npu-smi table (chip model) in self.table."""
        table = None
        npus = None
        if npu_smi:
            client = _npu_smi.NpuSmi(self.module, npu_smi, timeout=self.params["timeout"], runner=self.runner)

            def info_table() -> tuple:
                raw = client.run(["info"])
                table = _npu_smi.parse_info_table(raw)
                unknown = _npu_smi.version_problem(raw)
                if unknown:
                    self.warn(unknown)
                return table, _npu_smi.parse_version(raw)

            calls = [info_table] + ([client.info_list] if self.params["devices"] is None else [])
            # Both npu-smi calls at once: each costs a process start, and the hccn_tool calls wait for them.
            with ThreadPoolExecutor(max_workers=len(calls)) as pool:
                outcomes = list(pool.map(_attempt, calls))
            read, exc = outcomes[0]
            if read is not None:
                table, self.driver_version = read
            if isinstance(exc, _npu_smi.NpuSmiError):
                self.warn("%s: chip model unknown" % exc)
            elif isinstance(exc, _npu_smi.NpuSmiParseError):
                self.warn("cannot read the NPU table of `%s info` (chip model unknown): %r" % (npu_smi, exc.raw))
            if len(outcomes) > 1:
                npus, exc = outcomes[1]
                if isinstance(exc, _npu_smi.NpuSmiError):
                    self.warn("%s: falling back to /dev/davinci* for the device list" % exc)
                elif isinstance(exc, _npu_smi.NpuSmiParseError):
                    raise FactsError(
                        "cannot parse `%s info -l`; raw output: %r. Set the devices option to skip discovery." % (npu_smi, exc.raw),
                        stdout=exc.raw,
                    )
        self.table = table
        if self.params["devices"] is not None:
            return list(self.params["devices"]), "devices option"
        if npus is not None:
            return _npu_smi.device_ids(npus, table), "npu-smi"
        return _npu_smi.davinci_devices(self.params["dev_dir"]), "/dev/davinci"

    def warn_failed_devices(self, entries: list) -> None:
        """Say so when devices did not answer: their facts are incomplete (all of them: no device state at all)."""
        failed = [e for e in entries if e["error"]]
        if not failed:
            return
        named = "; ".join("device %d: %s" % (e["device_id"], e["error"]) for e in failed[:4])
        more = " (and %d more)" % (len(failed) - 4) if len(failed) > 4 else ""
        if len(failed) == len(entries):
            self.warn(
                "no device answered every hccn_tool query (%d of %d failed: %s%s): these facts hold no reliable device "
                "state; check the driver and the devices (npu-smi info, dmesg), or raise the timeout option"
                % (len(failed), len(entries), named, more)
            )
        else:
            self.warn(
                "%d of %d devices did not answer every hccn_tool query, their facts are incomplete: %s%s"
                % (len(failed), len(entries), named, more)
            )

    def warn_unparsed(self, tool: _hccn_tool.HccnTool, entries: list) -> None:
        """One warning per answer that could not be read: the command, what it printed and the facts left unknown."""
        for entry in entries:
            for query, raw in sorted(entry.get("unparsed", {}).items()):
                self.warn(
                    "device %d: `%s` printed %r, which this collection cannot read: %s unknown (null); the checks that need "
                    "it refuse this device. Check the driver version, and report this output (docs/real-outputs.md)"
                    % (
                        entry["device_id"],
                        " ".join(tool.command(entry["device_id"], ["-%s" % query, "-g"])),
                        raw,
                        ", ".join(QUERY_FIELDS[query]),
                    )
                )

    def versions(self, npu_smi: str | None) -> dict:
        """The driver (``npu-smi info``'s header), firmware (every NPU's board) and CANN versions (``_npu.versions``)."""
        found = dict(_sw_versions.read_cann(self.params.get("cann_dir")), driver_version=self.driver_version, firmware_version=None)
        if npu_smi and self.table:
            npus = [npu["npu_id"] for npu in self.table]
            by_npu = _sw_versions.read_firmware(self.module, npu_smi, npus, timeout=self.params["timeout"], runner=self.runner)
            found["firmware_version"] = _sw_versions.firmware_summary(by_npu)
        return found

    def gather(self) -> dict:
        validate_params(self.params)
        hccn, npu = self.find_tools()
        conf = self.read_conf()
        devices, listed_by = self.discover(npu)
        versions = self.versions(npu)
        if hccn is None:
            if conf is None:
                raise FactsError(
                    "neither hccn_tool (PATH, %s) nor %s was found: install the Ascend NPU driver, which provides "
                    "hccn_tool, or set the hccn_tool / hccn_conf option" % (_hccn_tool.DEFAULT_PATH, self.params["hccn_conf"])
                )
            self.warn(
                "hccn_tool not found (PATH, %s): facts come from %s, which can be stale, and link/net_health are "
                "unknown; install the Ascend NPU driver or set the hccn_tool option" % (_hccn_tool.DEFAULT_PATH, self.params["hccn_conf"])
            )
            if not devices:
                devices, listed_by = sorted(d for d, keys in conf.items() if "address" in keys), "hccn.conf"
            entries = [device_from_conf(d, conf) for d in devices]
            source = "hccn_conf"
        else:
            if not devices:
                raise FactsError(
                    "no NPU found on this host (npu-smi: %s, /dev/davinciN: none): check that the Ascend driver "
                    "is loaded, or list the device ids in the devices option" % (npu or "not found")
                )
            if conf is None:
                self.warn("%s not found: hccn.conf cross-check skipped" % self.params["hccn_conf"])
            queries = BASE_QUERIES + tuple(q for q in EXTRA_QUERIES if q in self.params["gather"])
            tool = _hccn_tool.HccnTool(self.module, hccn, timeout=self.params["timeout"], runner=self.runner)
            answers = query_devices(tool, devices, queries, self.params["parallel"])
            entries = [device_from_answers(d, answers, queries, conf) for d in devices]
            self.warn_failed_devices(entries)
            self.warn_unparsed(tool, entries)
            source = "hccn_tool"
        chip = _npu_smi.chip_facts(self.table)
        if chip["chip_problem"]:
            self.warn("chip unknown: %s" % chip["chip_problem"])
        return {
            **chip,
            "device_count": len(entries),
            "devices": entries,
            "device_list_source": listed_by,
            "source": source,
            "hccn_tool": hccn,
            "hccn_conf": self.params["hccn_conf"],
            "npu_smi": npu,
            "warnings": list(self.warnings),
            **versions,
        }
