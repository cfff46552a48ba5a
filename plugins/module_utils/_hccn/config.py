# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Bring the device IP settings of one host to what is wanted, through ``hccn_tool``.

Steps (the ``hccn_config`` module runs :meth:`Configurator.run`):

1. check every wanted value (``_hccn.ip_rules``), for all devices, before anything is touched;
2. read what each device reports, concurrently (``HccnTool`` getters);
3. plan only the differences: ``-ip -s`` first, then ``-gateway -s`` (the gateway must be inside
   the NEW subnet, so it is set again whenever the address changes), then ``-netdetect -s``;
   address moves between devices of this host are ordered so no set hits a conflict;
4. unless in check mode, apply the plan phase by phase (calls of one phase run concurrently);
5. read the changed devices back and fail if any of them does not report the wanted values.

hccn.conf (option ``hccn_conf``, when ``rewrite_stale_conf`` is on and the file exists): hccn_tool
rewrites a key's line on every set (reference section 1), so a line that disagrees with the device
(the device value already right, the file stale) is fixed the way the driver would: the device's own
value is set again. Step 3 adds those sets; the result carries a diff of the file, and after the
sets the file is read again - still stale means hccn_tool writes another file than ``hccn_conf``.

Runs on target hosts: Python 3.8+, stdlib only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ansible_collections.ascend.cluster.plugins.module_utils._hccn import conf_file as _hccn_conf
from ansible_collections.ascend.cluster.plugins.module_utils._hccn import tool as _hccn_tool
from ansible_collections.ascend.cluster.plugins.module_utils._hccn.ip_rules import FIELDS, IpCheckError, check_devices
from ansible_collections.ascend.cluster.plugins.module_utils._hccn.parse import ParseError
from ansible_collections.ascend.cluster.plugins.module_utils._host import text_file as _text_file
from ansible_collections.ascend.cluster.plugins.module_utils._npu import chip as _chip

if TYPE_CHECKING:
    from typing import Any

PHASES = ("ip", "gateway", "netdetect")

# What to tell the operator when a set is refused, keyed by a piece of hccn_tool's stderr.
SET_HINTS = (
    (
        "is conflicted",
        "another device of this host already has this address, or it is in 192.168.1.0/24; "
        "check `hccn_tool -i N -ip -g` on every device and the plan",
    ),
    ("is invalid", "hccn_tool does not accept this address/netmask; check the plan"),
    ("segment of configured gateway", "the gateway is outside the device subnet; fix the gateway or the netmask"),
    ("broadcast", "a broadcast address cannot be a netdetect target; use the gateway or a peer device"),
    ("no ip was preset", "the device has no address yet; set address and netmask together with the gateway"),
)


class ConfigError(Exception):
    """Stop the module: ``msg`` says what to fix, ``details`` holds raw output and partial results."""

    def __init__(self, msg: str, **details: Any) -> None:
        self.msg = msg
        self.details = details
        super().__init__(msg)


# What can be read, and the HccnTool getter that reads it (``ip`` gives address and netmask).
READS = (("ip", "get_ip"), ("gateway", "get_gateway"), ("netdetect", "get_netdetect"))
READS_ALL = tuple(name for name, _getter in READS)


def reads_for(wanted: dict) -> tuple:
    """The reads one wanted device needs: always ``ip``; gateway/netdetect only when managed."""
    return ("ip",) + tuple(name for name, _getter in READS[1:] if wanted[name])


def read_devices(tool: _hccn_tool.HccnTool, reads: dict, parallel: int, when: str) -> dict:
    """``{device: {address, netmask[, gateway][, netdetect]}}`` (``""`` when unset), every read concurrent.

    ``reads`` maps each device to the reads it needs (see :func:`reads_for`). Raises ConfigError
    naming the first device that could not be read.
    """
    getters = dict(READS)
    tasks = [(device, name) for device in sorted(reads) for name in reads[device]]
    answers = _hccn_tool.pool_map(lambda task: getattr(tool, getters[task[1]])(task[0]), tasks, parallel)
    states: dict = dict((device, {}) for device in reads)
    for (device, name), value in zip(tasks, answers):
        if isinstance(value, ParseError):
            # The device's current value is unknown, so nothing is set on it (fail closed), naming field and answer.
            raise ConfigError(
                "%s: `%s` printed %r for device %d, which this collection cannot read (%s unknown); check the driver "
                "version, and report the output (docs/real-outputs.md)"
                % (when, " ".join(tool.command(device, ["-%s" % name, "-g"])), value.raw, device, value.what),
                stdout=value.raw,
            )
        if isinstance(value, _hccn_tool.HccnError):
            raise ConfigError(
                "%s: cannot read device %d (%s): %s; check the device with `npu-smi info` and the devices list"
                % (when, device, " ".join(value.result.cmd), value.reason),
                cmd=value.result.cmd,
                rc=value.result.rc,
                stdout=value.result.stdout,
                stderr=value.result.stderr,
            )
        if name == "ip":
            states[device].update(address=value["address"], netmask=value["netmask"])
        else:
            states[device][name] = value
    return states


def wanted_state(wanted: dict, current: dict) -> dict:
    """The state the device should end in, for the fields that were read (the managed ones)."""
    state = dict(current)
    for field in current:
        if wanted.get(field):
            state[field] = wanted[field]
    return state


def plan_device(wanted: dict, current: dict) -> list:
    """The ``(phase, hccn_tool args)`` steps that take one device from ``current`` to ``wanted``."""
    steps = []
    ip_changes = (wanted["address"], wanted["netmask"]) != (current["address"], current["netmask"])
    if ip_changes:
        steps.append(("ip", ["-ip", "-s", "address", wanted["address"], "netmask", wanted["netmask"]]))
    if wanted["gateway"] and (ip_changes or wanted["gateway"] != current.get("gateway")):
        steps.append(("gateway", ["-gateway", "-s", "gateway", wanted["gateway"]]))
    if wanted["netdetect"] and wanted["netdetect"] != current.get("netdetect"):
        steps.append(("netdetect", ["-netdetect", "-s", "address", wanted["netdetect"]]))
    return steps


# What each set writes to hccn.conf, by phase.
PHASE_KEYS = {"ip": ("address", "netmask"), "gateway": ("gateway",), "netdetect": ("netdetect",)}


def conf_steps(target: dict, stale: list, steps: list) -> tuple:
    """``(steps, unfixable keys)``: one device's ``steps`` plus the sets that make hccn_tool rewrite its ``stale`` hccn.conf keys.

    ``target`` is the state the device ends in, ``steps`` what the plan already sets (those keys are
    rewritten anyway). A stale key is fixed by setting the device's value again; a key whose device
    value is unset cannot be (hccn_tool removes no gateway or netdetect address): it is returned as
    unfixable. The address is set again as a pair with the netmask, and then the gateway too, as
    after any address set (it must be inside the device subnet).
    """
    planned = set(phases_of(steps))
    extra = []
    unfixable = []
    wants = set()
    for key in stale:
        phase = "ip" if key in ("address", "netmask") else key
        if phase in planned:
            continue
        if not all(target.get(field) for field in PHASE_KEYS[phase]):
            unfixable.append(key)
            continue
        wants.add(phase)
    if "ip" in wants and target.get("gateway"):
        wants.add("gateway")
    for phase in PHASES:
        if phase not in wants or phase in planned:
            continue
        if phase == "ip":
            extra.append(("ip", ["-ip", "-s", "address", target["address"], "netmask", target["netmask"]]))
        elif phase == "gateway":
            extra.append(("gateway", ["-gateway", "-s", "gateway", target["gateway"]]))
        else:
            extra.append(("netdetect", ["-netdetect", "-s", "address", target["netdetect"]]))
    merged = sorted(steps + extra, key=lambda step: PHASES.index(step[0]))
    return merged, unfixable


def conf_items(device: int, steps: list, target: dict) -> list:
    """The ``(key, value)`` lines hccn_tool writes to hccn.conf for one device's steps, in order."""
    return [("%s_%d" % (key, device), target[key]) for phase, _args in steps for key in PHASE_KEYS[phase]]


def phases_of(steps: list) -> list:
    """The phase names of a device's steps, in order."""
    return [step[0] for step in steps]


def ip_waves(moving: dict, current: dict) -> list:
    """Order address changes so none takes an address another device still holds.

    ``moving`` maps device -> wanted address for devices whose address changes; ``current`` maps
    every read device to its state. Returns lists of devices that may be set together; raises
    ConfigError for a swap (a cycle), which needs a temporary address.
    """
    holder = {state["address"]: device for device, state in current.items() if state["address"]}
    pending = dict(moving)
    waves = []
    while pending:
        ready = sorted(d for d, address in pending.items() if holder.get(address, d) == d or holder[address] not in pending)
        if not ready:
            cycle = ", ".join("device %d -> %s (now on device %d)" % (d, a, holder[a]) for d, a in sorted(pending.items()))
            raise ConfigError(
                "the wanted addresses swap between devices (%s); hccn_tool refuses an address another device "
                "holds, so move one of them to a free address in a first run" % cycle
            )
        waves.append(ready)
        for device in ready:
            del pending[device]
    return waves


def _hint(stderr: str) -> str:
    lowered = stderr.lower()
    for text, hint in SET_HINTS:
        if text.lower() in lowered:
            return hint
    return "check the device with `npu-smi info` and retry"


class Configurator:
    """Configure the listed devices of this host; ``run()`` returns the module result."""

    def __init__(self, module, tool):
        self.module = module
        self.tool = tool
        self.params = module.params
        # What the operator should know (a stale hccn.conf line no set can fix, an unreadable file).
        self.warnings: list = []

    def conf_path(self) -> str | None:
        """The hccn.conf to keep in line with the devices, None when that is off."""
        if not self.params.get("rewrite_stale_conf", True):
            return None
        return self.params.get("hccn_conf") or None

    def read_conf_text(self, path: str | None) -> str | None:
        """The file's text; None when there is none to check (no path, missing, unreadable: with a warning)."""
        if path is None:
            return None
        try:
            return _text_file.read_text(path)
        except (OSError, UnicodeDecodeError) as exc:
            self.warnings.append("cannot read %s (%s): its lines were not compared with the devices" % (path, exc))
            return None

    def validate(self) -> list:
        if self.params["parallel"] < 1:
            raise ConfigError("parallel must be 1 or more (got %d)" % self.params["parallel"])
        if self.params["timeout"] < 1:
            raise ConfigError("timeout must be 1 second or more (got %d)" % self.params["timeout"])
        try:
            return check_devices(self.params["devices"], _chip.ANY_CHIP_MAX_DEVICE_ID)
        except IpCheckError as exc:
            raise ConfigError("the wanted device IP settings are wrong, nothing was changed: %s" % exc, problems=exc.problems) from exc

    def run(self) -> dict:
        wanted = self.validate()
        ids = [w["device_id"] for w in wanted]
        parallel = self.params["parallel"]
        path = self.conf_path()
        conf_text = self.read_conf_text(path)
        conf = _hccn_conf.parse_conf(conf_text) if conf_text is not None else None
        # With a file to compare, every field of every listed device is read: a line is stale
        # whether or not this run manages the field (as hccn_facts judges it).
        reads = dict((w["device_id"], READS_ALL if conf is not None else reads_for(w)) for w in wanted)
        before = read_devices(self.tool, reads, parallel, "before any change")
        targets = {w["device_id"]: wanted_state(w, before[w["device_id"]]) for w in wanted}
        plans = {w["device_id"]: plan_device(w, before[w["device_id"]]) for w in wanted}
        stale: dict = dict((d, []) for d in ids)
        if conf is not None:
            for d in ids:
                keys = _hccn_conf.state_stale_keys(targets[d], conf.get(d, {}))
                plans[d], unfixable = conf_steps(targets[d], keys, plans[d])
                stale[d] = [k for k in keys if k not in unfixable]
                for key in unfixable:
                    self.warnings.append(
                        "%s has %s_%d=%s but device %d has no %s, and hccn_tool cannot remove one: delete that line "
                        "from %s by hand (the device is the truth)" % (path, key, d, conf[d].get(key), d, key, path)
                    )
        moving = {w["device_id"]: w["address"] for w in wanted if "ip" in phases_of(plans[w["device_id"]])}
        waves = ip_waves(moving, before)
        results = {
            d: {
                "device_id": d,
                "changed": bool(plans[d]),
                "changes": phases_of(plans[d]),
                "commands": [" ".join(self.tool.command(d, step[1])) for step in plans[d]],
                "stale_conf_keys": stale[d],
                "before": before[d],
                "after": targets[d],
            }
            for d in ids
        }
        changed = any(plans.values())
        conf_after = conf_text
        if conf_text is not None:
            items = [item for d in ids for item in conf_items(d, plans[d], targets[d])]
            conf_after = _hccn_conf.rewritten(conf_text, items) if items else conf_text
        if changed and not self.module.check_mode:
            self.apply(plans, waves, results)
            after = self.read_back(wanted, dict((d, reads[d]) for d in ids if plans[d]), results)
            for device, state in after.items():
                targets[device] = results[device]["after"] = state
            if conf_text is not None and path is not None:
                conf_after = self.check_conf_rewritten(path, [d for d in ids if plans[d]], targets, results)
        diff: list = [
            {
                "before": dict(("device %d" % d, before[d]) for d in ids),
                "after": dict(("device %d" % d, targets[d]) for d in ids),
            }
        ]
        if conf_text is not None:
            diff.append({"before_header": path, "after_header": path, "before": conf_text, "after": conf_after})
        return {"changed": changed, "devices": [results[d] for d in ids], "diff": diff}

    def check_conf_rewritten(self, path: str, devices: list, states: dict, results: dict) -> str:
        """The file's text after the sets; ConfigError when a set device's lines still disagree with it."""
        try:
            text = _text_file.read_text(path) or ""
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(
                "the sets were applied but %s cannot be read back (%s); check the file" % (path, exc),
                changed=True,
                devices=[results[d] for d in sorted(results)],
            ) from exc
        conf = _hccn_conf.parse_conf(text)
        wrong = []
        for device in devices:
            keys = _hccn_conf.state_stale_keys(states[device], conf.get(device, {}))
            wrong += ["%s_%d" % (key, device) for key in keys]
        if wrong:
            raise ConfigError(
                "hccn_tool set the devices' values again but %s still disagrees with them on %s: hccn_tool writes "
                "its own file (/etc/hccn.conf on a standard driver install); point the hccn_conf option "
                "(ascend_hccn_conf) at the file this driver writes, then run again" % (path, ", ".join(wrong)),
                changed=True,
                devices=[results[d] for d in sorted(results)],
            )
        return text

    def apply(self, plans: dict, waves: list, results: dict) -> None:
        """Run the steps phase by phase; on the first refused set, stop and report what was done."""
        batches = [[(d, plans[d][0][1]) for d in wave] for wave in waves]
        for phase in PHASES[1:]:
            batches.append([(d, step[1]) for d in sorted(plans) for step in plans[d] if step[0] == phase])
        done: list = []
        for batch in batches:
            answers = _hccn_tool.pool_map(lambda item: self.tool.query(item[0], item[1]), batch, self.params["parallel"])
            # query() only raises HccnError (it parses nothing), so an answer is stdout or one.
            failed: tuple[int, _hccn_tool.HccnError] | None = None
            for (device, args), answer in zip(batch, answers):
                if isinstance(answer, _hccn_tool.HccnError):
                    failed = failed or (device, answer)
                else:
                    done.append(" ".join(self.tool.command(device, args)))
            if failed:
                device, error = failed
                stderr = getattr(error, "stderr", "") or str(error)
                raise ConfigError(
                    "device %d: `%s` failed: %s (rc=%s); %s. %d earlier set(s) were applied and stay in place."
                    % (device, " ".join(error.result.cmd), stderr, error.result.rc, _hint(stderr), len(done)),
                    changed=bool(done),
                    applied=done,
                    devices=[results[d] for d in sorted(results)],
                    cmd=error.result.cmd,
                    rc=error.result.rc,
                    stdout=error.result.stdout,
                    stderr=error.result.stderr,
                )

    def read_back(self, wanted: list, reads: dict, results: dict) -> dict:
        """Re-read the changed devices; ConfigError when one does not report a wanted value."""
        after = read_devices(self.tool, reads, self.params["parallel"], "reading back after the change")
        wrong = []
        for entry in wanted:
            device = entry["device_id"]
            if device not in after:
                continue
            for field in FIELDS:
                if entry[field] and after[device][field] != entry[field]:
                    wrong.append("device %d %s: set %r, the device reports %r" % (device, field, entry[field], after[device][field]))
        if wrong:
            raise ConfigError(
                "hccn_tool accepted the change but the devices do not report it: %s; check the driver log "
                "(/var/log/hccn_tool) and /etc/hccn.conf, then run again" % "; ".join(wrong),
                changed=True,
                devices=[results[d] for d in sorted(results)],
                read_back=dict(("device %d" % d, after[d]) for d in sorted(after)),
            )
        return after
