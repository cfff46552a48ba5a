"""``ascend-sim``: set up, inspect and break simulated Ascend hosts (see docs/simulator.md)."""

from __future__ import annotations

import argparse
import json
import os
import sys

from . import answers, conf, store, versions
from ._rt import DEFAULT_STATE_DIR, SimError, ip_to_int, load, read_fabric, state_dir
from .npusmi import CHIP_INFO, NPU_NAMES

PACKAGE_PARENT = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))

# chip -> (largest device id, default device count, largest device count)
PROFILES = {
    "910A": (7, 8, 8),
    "910B": (15, 8, 16),
    "A3": (15, 16, 16),
}
CHIP_ALIASES = {"910a": "910A", "910": "910A", "910b": "910B", "a2": "910B", "a3": "A3", "910_93": "A3", "910c": "A3"}

# npu-smi info's Health column (reference section 2).
NPU_HEALTH_CHOICES = ("OK", "Warning", "Alarm", "Critical", "UNKNOWN")
HEALTH_CHOICES = (
    "Success",
    "Socket fail",
    "Receive timeout",
    "Unreachable",
    "Time exceeded",
    "Fault",
    "Init",
    "Thread error",
    "Detect ip set",
    "Unknown",
)
TOOLS = ("hccn_tool", "npu-smi")


def chip_name(text: str) -> str:
    if text in PROFILES:
        return text
    key = text.strip().lower()
    if key in CHIP_ALIASES:
        return CHIP_ALIASES[key]
    raise argparse.ArgumentTypeError("unknown chip %r: use 910A, 910B (alias A2) or A3" % text)


def _mac(sdir, dev_id):
    import zlib

    crc = zlib.crc32(os.path.realpath(sdir).encode("utf-8"))
    octets = [0x02, 0x5A, (crc >> 24) & 255, (crc >> 16) & 255, (crc >> 8) & 255, (crc + dev_id) & 255]
    return ":".join("%02x" % o for o in octets)


def _device_ids(chip, devices, device_ids):
    max_id, default_count, max_count = PROFILES[chip]
    if device_ids:
        try:
            ids = sorted({int(x) for x in device_ids.split(",") if x.strip() != ""})
        except ValueError:
            raise SimError("--device-ids takes comma-separated integers, e.g. 0,1,2,3") from None
    else:
        count = default_count if devices is None else devices
        if not 1 <= count <= max_count:
            raise SimError("a %s host has 1 to %d devices (got %d)" % (chip, max_count, count))
        ids = list(range(count))
    if not ids:
        raise SimError("no device ids given")
    bad = [i for i in ids if i < 0 or i > max_id]
    if bad:
        raise SimError("device id(s) %s out of range for %s: 0..%d" % (bad, chip, max_id))
    if len(ids) > max_count:
        raise SimError("a %s host has at most %d devices" % (chip, max_count))
    return ids


def new_state(
    sdir, chip, ids, hccn_conf, mode, fabric, latency, settle, host_id, tls, variant, npu_name=None, driver=None, tls_form="full"
):
    devices = {}
    for i in ids:
        devices[str(i)] = {
            "ip": None,
            "netmask": None,
            "gateway": None,
            "netdetect": None,
            "netdetect_at": 0.0,
            "tls": tls,
            "tls_preset": 1,
            "tls_alarm": 60,
            "link": "UP",
            "mac": _mac(sdir, i),
            "faults": {"error": False, "health": None},
        }
    return {
        "version": store.STATE_VERSION,
        "chip": chip,
        "host_id": host_id,
        "mode": mode,
        "fabric": fabric,
        "hccn_conf": hccn_conf,
        "latency": latency,
        "settle": settle,
        "tls_default": tls,
        "driver_variant": variant,
        "npu_name": npu_name,
        "driver": driver,
        "tls_form": tls_form,
        "devices": devices,
        "faults": {"latency": None, "unreachable": [], "stale_conf": None, "driver_missing": []},
        "installs": [],
    }


CONFIG_KEYS = (
    "chip",
    "host_id",
    "mode",
    "fabric",
    "hccn_conf",
    "latency",
    "settle",
    "tls_default",
    "driver_variant",
    "npu_name",
    "driver",
    "tls_form",
)
TLS_FORMS = ("full", "short")


def npu_name_of(chip: str, name: str | None) -> str | None:
    """``name`` when it is one the chip's servers print (:data:`NPU_NAMES`), None for the chip's default; SimError else."""
    if not name:
        return None
    if name not in NPU_NAMES[chip]:
        raise SimError("npu-smi on a %s server prints one of %s, not %r" % (chip, ", ".join(NPU_NAMES[chip]), name))
    return name


def do_init(args):
    sdir = os.path.abspath(args.state)
    if args.mode == "bed" and args.fabric:
        raise SimError("--fabric is for --mode fabric; bed mode uses the real interfaces eth0..ethN")
    fabric = None
    if args.mode == "fabric":
        fabric = os.path.abspath(args.fabric) if args.fabric else os.path.join(sdir, "fabric")
    ids = _device_ids(args.chip, args.devices, args.device_ids)
    host_id = args.host_id
    if not host_id:
        host_id = os.uname().nodename if sdir == DEFAULT_STATE_DIR else os.path.basename(sdir.rstrip("/")) or "host"
    hccn_conf = os.path.abspath(args.hccn_conf)
    state = new_state(
        sdir,
        args.chip,
        ids,
        hccn_conf,
        args.mode,
        fabric,
        args.latency,
        args.settle,
        host_id,
        args.tls,
        args.driver_variant,
        npu_name_of(args.chip, getattr(args, "npu_name", None)),
        getattr(args, "driver", None) or None,
        getattr(args, "tls_form", None) or "full",
    )
    cann_dir = getattr(args, "cann_dir", None)
    if cann_dir:
        state["cann_dir"] = os.path.abspath(cann_dir)
    os.makedirs(sdir, exist_ok=True)
    with store.locked(sdir):
        try:
            old = store.read_json(sdir)
        except SimError:
            old = None
        if old is not None and not args.force:
            same = all(old.get(k) == state.get(k) for k in CONFIG_KEYS) and sorted(old["devices"], key=int) == [str(i) for i in ids]
            if same:
                store.publish(sdir, old)
                answers.ensure(sdir)
                conf.ensure(hccn_conf)
                versions.write_files(old)
                if not args.quiet:
                    print("ascend-sim: %s already initialised with these settings (unchanged)" % sdir)
                return 0
            diff = [k for k in CONFIG_KEYS if old.get(k) != state.get(k)]
            if sorted(old["devices"], key=int) != [str(i) for i in ids]:
                diff.append("devices")
            raise SimError("%s is already initialised with different settings (%s); add --force to reset it" % (sdir, ", ".join(diff)))
        if old is not None:
            store.unpublish(sdir, old)
            state["installs"] = old.get("installs", [])
            conf.ensure(hccn_conf)
            with open(hccn_conf, "w", encoding="utf-8"):
                pass  # a reset host starts with an empty hccn.conf
        conf.ensure(hccn_conf)
        store.write(sdir, state)
        versions.write_files(state)
    if not args.quiet:
        where = "fabric %s" % fabric if fabric else "real interfaces eth%d..eth%d" % (ids[0], ids[-1])
        print(
            "ascend-sim: initialised %s: %s, devices %s, mode %s (%s), hccn.conf %s"
            % (sdir, args.chip, ",".join(str(i) for i in ids), args.mode, where, hccn_conf)
        )
    return 0


WRAPPER = """#!{python} -S
# {tool} stand-in written by `ascend-sim install` (ascend.cluster simulator, see docs/simulator.md).
import sys
sys.path.insert(0, {package!r})
from ascend_sim.{module} import main
sys.exit(main(None, {state!r}))
"""


# hccn_tool: POSIX sh. `-i ID CMD -g` of a state-only get command is answered from the answers the
# last state write rendered (answers.py: same bytes, exit status and latency); anything else, or
# anything odd, runs the simulator exactly like the Python wrapper above. Exit 254 of the subshell
# means "not answered" (answers.FALLBACK_RC: no cached answer has it).
WRAPPER_HCCN = """#!/bin/sh
# hccn_tool stand-in written by `ascend-sim install` (ascend.cluster simulator, see docs/simulator.md).
python={python}
package={package}
default_state={state}
state=${{ASCEND_SIM_STATE:-$default_state}}
state=${{state:-{default}}}
num() {{
    case $1 in
        '' | *[!0-9]*) return 1 ;;
    esac
}}
if [ "$#" -eq 4 ] && [ "$1" = -i ] && [ "$4" = -g ] && [ -z "${{ASCEND_SIM_LATENCY:-}}" ] &&
    [ -z "${{ASCEND_SIM_NO_FAST_PATH:-}}" ]; then
    case $2 in
        [0-9] | [1-9][0-9]) id=$2 ;;
        *) id= ;;
    esac
    case $3 in
        -ip | -gateway | -netdetect | -mac | -tls | -link) cmd=${{3#-}} ;;
        *) cmd= ;;
    esac
    if [ -n "$id" ] && [ -n "$cmd" ]; then
        (
            cd -P -- "$state/answers" 2>/dev/null || exit {fallback}
            [ -f "$id" ] || exit {fallback}
            cmp -s ../state.json state.json || exit {fallback}
            found='' out='' err=''
            {{
                while [ -z "$found" ] && read -r name rc latency nout nerr; do
                    num "$rc" && num "$nout" && num "$nerr" || exit {fallback}
                    if [ "$name" = "$cmd" ]; then
                        found=1
                    fi
                    while [ "$nout" -gt 0 ] && IFS= read -r line; do
                        out=$out$line'
'
                        nout=$((nout - 1))
                    done
                    while [ "$nerr" -gt 0 ] && IFS= read -r line; do
                        err=$err$line'
'
                        nerr=$((nerr - 1))
                    done
                    [ "$nout" = 0 ] && [ "$nerr" = 0 ] || exit {fallback}
                    if [ -z "$found" ]; then
                        out='' err=''
                    fi
                done
            }} <"$id" 2>/dev/null || exit {fallback}
            [ -n "$found" ] || exit {fallback}
            if [ "$latency" != 0 ]; then
                sleep "$latency" 2>/dev/null || exit {fallback}
            fi
            printf '%s' "$out"
            printf '%s' "$err" >&2
            exit "$rc"
        )
        rc=$?
        if [ "$rc" -ne {fallback} ]; then
            exit "$rc"
        fi
    fi
fi
exec "$python" -S -c '
import sys
package, state = sys.argv[1:3]
del sys.argv[1:3]
sys.path[:] = [package] + [p for p in sys.path if p]
from ascend_sim.hccn_main import main
sys.exit(main(None, state or None))
' "$package" "$default_state" "$@"
"""


def write_wrapper(bin_dir: str, tool: str, python: str, sdir: str | None) -> str:
    if " " in python or len(python) > 120:
        raise SimError("the interpreter path %r cannot go into a #! line; pass --python PATH" % python)
    if tool == "hccn_tool":
        import shlex

        from .answers import FALLBACK_RC

        text = WRAPPER_HCCN.format(
            python=shlex.quote(python),
            package=shlex.quote(PACKAGE_PARENT),
            state=shlex.quote(sdir or ""),
            default=DEFAULT_STATE_DIR,
            fallback=FALLBACK_RC,
        )
    else:
        text = WRAPPER.format(python=python, tool=tool, package=PACKAGE_PARENT, module="npusmi", state=sdir)
    path = os.path.join(bin_dir, tool)
    tmp = "%s.tmp.%d" % (path, os.getpid())
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.chmod(tmp, 0o755)
    os.replace(tmp, path)
    return path


def precompile(python=None):
    """Write the package's .pyc files for ``python`` (and this interpreter).

    Each hccn_tool call would otherwise recompile the modules when PYTHONDONTWRITEBYTECODE is
    set (or the checkout is read-only for the caller): ~10 ms of CPU per call.
    """
    import compileall
    import subprocess

    package = os.path.join(PACKAGE_PARENT, "ascend_sim")
    try:
        compileall.compile_dir(package, quiet=1)
    except OSError:
        pass
    if python and os.path.realpath(python) != os.path.realpath(sys.executable):
        try:
            subprocess.run(
                [python, "-m", "compileall", "-q", package], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60, check=False
            )
        except (OSError, subprocess.TimeoutExpired):
            pass


def do_install(args):
    bin_dir = os.path.abspath(args.bin_dir)
    os.makedirs(bin_dir, exist_ok=True)
    python = args.python or sys.executable
    sdir = os.path.abspath(args.state) if args.state else None
    for tool in TOOLS:
        write_wrapper(bin_dir, tool, python, sdir)
    precompile(python)
    record_dir = sdir or state_dir()
    if os.path.exists(os.path.join(record_dir, "state.json")):

        def remember(state):
            installs = [i for i in state.get("installs", []) if i.get("bin_dir") != bin_dir]
            installs.append({"bin_dir": bin_dir, "python": python, "state": sdir})
            state["installs"] = installs
            missing = state.get("faults", {}).get("driver_missing") or []
            if bin_dir in missing:
                missing.remove(bin_dir)

        store.update(record_dir, remember)
    if not args.quiet:
        print(
            "ascend-sim: installed hccn_tool and npu-smi in %s (python %s, state %s)"
            % (bin_dir, python, sdir or "$ASCEND_SIM_STATE or %s" % DEFAULT_STATE_DIR)
        )
    return 0


# --- IP plans used by `cluster --preset-ips` -------------------------------------------------


def ip_plan(chip, servers, server, device_ids, netdetect):
    """{device id: (address, netmask, gateway, netdetect)} for one server, all in 198.18.0.0/15.

    910A ("SMP", like seed 004): devices d and d+4 share subnet 198.18.<d mod 4>.0/24; host part
    100 + 10*server, +1 for devices 0-3 (server0: .101/.100, server1: .111/.110), gateway .1.
    910B/A3 ("AMP"): one subnet 198.18.0.0/16; server s device d = 198.18.<s+1>.<d+10>, gateway
    198.18.0.1. netdetect: the gateway, or ("peer") the same device of the next server.
    """

    def addr(s, d):
        if chip == "910A":
            return "198.18.%d.%d" % (d % 4, 100 + 10 * s + (1 if d < 4 else 0))
        return "198.18.%d.%d" % (s + 1, d + 10)

    if chip == "910A" and servers > 15:
        raise SimError("the 910A preset plan holds at most 15 servers")
    if chip != "910A" and servers > 254:
        raise SimError("the preset plan holds at most 254 servers")
    plan = {}
    for d in device_ids:
        if chip == "910A":
            mask, gateway = "255.255.255.0", "198.18.%d.1" % (d % 4)
        else:
            mask, gateway = "255.255.0.0", "198.18.0.1"
        target = gateway
        if netdetect == "peer" and servers > 1:
            target = addr((server + 1) % servers, d)
        plan[d] = (addr(server, d), mask, gateway, target)
    return plan


def _hccn(sdir, argv):
    from . import hccn

    out = hccn.Out()
    rc = hccn.run(argv, sdir, out, no_latency=True, writer=store.update)
    if rc != 0:
        raise SimError("hccn_tool %s failed (exit %d): %s" % (" ".join(argv), rc, "".join(out.err).strip()))


def preset_ips(sdir, plan):
    for d in sorted(plan):
        address, mask, gateway, target = plan[d]
        _hccn(sdir, ["-i", str(d), "-ip", "-s", "address", address, "netmask", mask])
        _hccn(sdir, ["-i", str(d), "-gateway", "-s", "gateway", gateway])
        _hccn(sdir, ["-i", str(d), "-netdetect", "-s", "address", target])


VARIANT_KEYS = {"npu-name": "npu_name", "driver": "driver", "tls-form": "tls_form"}


def cluster_variants(specs: list | None, servers: int) -> dict:
    """``{server index: {"npu_name", "driver", "tls_form"}}`` from ``--variant`` specs: ``server1:npu-name=910B2C,driver=26.0.rc1``
    (several in one value, or one per value, separated by ``;``)."""
    found: dict = {}
    for text in specs or []:
        for spec in [part.strip() for part in str(text).split(";") if part.strip()]:
            server, sep, body = spec.partition(":")
            index = server[len("server") :] if server.startswith("server") else server
            if not sep or not index.isdigit() or not 0 <= int(index) < servers:
                raise SimError("--variant %r: use server<N>:key=value,... with N below %d" % (spec, servers))
            for pair in body.split(","):
                key, sep, value = pair.partition("=")
                if key.strip() not in VARIANT_KEYS or not sep or not value.strip():
                    raise SimError("--variant %r: the keys are %s, each key=value" % (spec, ", ".join(VARIANT_KEYS)))
                if key.strip() == "tls-form" and value.strip() not in TLS_FORMS:
                    raise SimError("--variant %r: tls-form is %s" % (spec, " or ".join(TLS_FORMS)))
                found.setdefault(int(index), {})[VARIANT_KEYS[key.strip()]] = value.strip()
    return found


def do_cluster(args):
    root = os.path.abspath(args.root)
    variants = cluster_variants(getattr(args, "variant", None), args.servers)
    fabric = os.path.join(root, "fabric")
    os.makedirs(fabric, exist_ok=True)
    python = args.python or sys.executable
    servers = []
    for s in range(args.servers):
        name = "server%d" % s
        base = os.path.join(root, name)
        sdir = os.path.join(base, "state")
        bin_dir = os.path.join(base, "bin")
        hccn_conf = os.path.join(base, "hccn.conf")
        init_args = argparse.Namespace(
            state=sdir,
            chip=args.chip,
            devices=args.devices,
            device_ids=args.device_ids,
            hccn_conf=hccn_conf,
            mode="fabric",
            fabric=fabric,
            latency=args.latency,
            settle=args.settle,
            host_id=name,
            force=args.force,
            tls=args.tls,
            driver_variant=args.driver_variant,
            cann_dir=os.path.join(base, "Ascend"),
            npu_name=variants.get(s, {}).get("npu_name", getattr(args, "npu_name", None)),
            driver=variants.get(s, {}).get("driver", getattr(args, "driver", None)),
            tls_form=variants.get(s, {}).get("tls_form", getattr(args, "tls_form", None) or "full"),
            quiet=True,
        )
        do_init(init_args)
        do_install(argparse.Namespace(bin_dir=bin_dir, state=sdir, python=python, quiet=True))
        state = load(sdir)
        ids = sorted(int(i) for i in state["devices"])
        if args.preset_ips:
            preset_ips(sdir, ip_plan(args.chip, args.servers, s, ids, args.netdetect))
        servers.append(
            {
                "name": name,
                "host_id": name,
                "state_dir": sdir,
                "bin_dir": bin_dir,
                "hccn_conf": hccn_conf,
                "cann_dir": os.path.join(base, "Ascend"),
                "device_ids": ids,
                "npu_name": state.get("npu_name") or CHIP_INFO[args.chip][0],
                "driver": versions.driver_version(state),
                "tls_form": state.get("tls_form") or "full",
                "env": {"ASCEND_SIM_STATE": sdir, "PATH_PREPEND": bin_dir},
            }
        )
    description = {
        "root": root,
        "fabric": fabric,
        "chip": args.chip,
        "latency": args.latency,
        "settle": args.settle,
        "preset_ips": bool(args.preset_ips),
        "servers": servers,
    }
    text = json.dumps(description, indent=2, sort_keys=True) + "\n"
    path = os.path.join(root, "cluster.json")
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(path + ".tmp", path)
    if not args.quiet:  # the description stays in <root>/cluster.json
        sys.stdout.write(text)
    return 0


# --- faults ----------------------------------------------------------------------------------


def _devices_arg(state, text):
    if text is None or text == "all":
        return sorted(state["devices"], key=int)
    ids = []
    for part in text.split(","):
        part = part.strip()
        if part not in state["devices"]:
            raise SimError("device %s does not exist on this host (devices: %s)" % (part, ",".join(sorted(state["devices"], key=int))))
        ids.append(part)
    return ids


def _bed_link(state, ids, up):
    if state.get("mode") == "bed":
        from . import bed

        for i in ids:
            bed.set_link(i, up)


def _update_devices(sdir, device_arg, edit):
    """Apply ``edit(device_state)`` to the devices ``device_arg`` names (id, list or 'all'); their ids."""

    def change(state):
        ids = _devices_arg(state, device_arg)
        for i in ids:
            edit(state["devices"][i])
        return ids

    return store.update(sdir, change)


def _fault_driver_missing(sdir, args, messages):
    def change(state):
        installs = state.get("installs") or []
        if not installs:
            raise SimError("no installed hccn_tool recorded for %s: run `ascend-sim install --bin-dir DIR --state %s` first" % (sdir, sdir))
        missing = state["faults"].setdefault("driver_missing", [])
        for inst in installs:
            path = os.path.join(inst["bin_dir"], "hccn_tool")
            if os.path.exists(path):
                os.unlink(path)
            if inst["bin_dir"] not in missing:
                missing.append(inst["bin_dir"])
            messages.append("removed %s" % path)

    store.update(sdir, change)


def _fault_clear(sdir, args, messages):
    restored = []

    def change(state):
        faults = state.setdefault("faults", {})
        for inst in state.get("installs") or []:
            if inst["bin_dir"] in (faults.get("driver_missing") or []):
                os.makedirs(inst["bin_dir"], exist_ok=True)
                write_wrapper(inst["bin_dir"], "hccn_tool", inst["python"], inst.get("state"))
                messages.append("restored %s" % os.path.join(inst["bin_dir"], "hccn_tool"))
        stale = faults.get("stale_conf")
        if stale is not None:
            with open(state["hccn_conf"], "w", encoding="utf-8") as f:
                f.write(stale["backup"])
            os.chmod(state["hccn_conf"], conf.CONF_MODE)
            messages.append("restored %s" % state["hccn_conf"])
        down = []
        for dev_id, dev in state["devices"].items():
            if dev.get("link") != "UP":
                down.append(dev_id)
            dev["link"] = "UP"
            dev["tls"] = state.get("tls_default", 0)
            dev["faults"] = {"error": False, "health": None}
            dev.pop("npu_health", None)
            dev.pop("npu_error_code", None)
            dev.pop("npu_error_info", None)
        state.pop("npu_smi_version", None)
        for key in ("firmware", "cann_toolkit", "cann_kernels", "compatibility"):
            state.pop(key, None)
        for dev in state["devices"].values():
            dev.pop("firmware", None)
        restored.extend(down)
        state["faults"] = {"latency": None, "unreachable": [], "stale_conf": None, "driver_missing": []}

    store.update(sdir, change)
    state = load(sdir)
    versions.write_files(state)
    _bed_link(state, restored, True)
    messages.append("cleared all faults of %s" % sdir)


def _fault_link(sdir, args, messages):
    up = args.up

    def change(state):
        ids = _devices_arg(state, args.device)
        for i in ids:
            state["devices"][i]["link"] = "UP" if up else "DOWN"
        return ids

    ids = store.update(sdir, change)
    _bed_link(load(sdir), ids, up)
    messages.append("link %s on device(s) %s" % ("UP" if up else "DOWN", ",".join(ids)))


def _fault_unreachable(sdir, args, messages):
    if ip_to_int(args.ip) is None:
        raise SimError("--ip takes an IPv4 address")
    device = None if args.device in (None, "all") else int(args.device)

    def change(state):
        if device is not None:
            _devices_arg(state, str(device))
        entries = state["faults"].setdefault("unreachable", [])
        entry = {"ip": args.ip, "device": device}
        if args.remove:
            state["faults"]["unreachable"] = [e for e in entries if e != entry]
        elif entry not in entries:
            entries.append(entry)

    store.update(sdir, change)
    where = "all devices" if device is None else "device %d" % device
    messages.append("%s %s unreachable from %s" % ("no longer" if args.remove else "made", args.ip, where))


def _fault_error(sdir, args, messages):
    def change(state):
        ids = _devices_arg(state, args.device)
        for i in ids:
            state["devices"][i].setdefault("faults", {})["error"] = not args.off
        return ids

    ids = store.update(sdir, change)
    messages.append("device(s) %s %s" % (",".join(ids), "healthy again" if args.off else "fail every call"))


def _fault_tls(sdir, args, messages):
    ids = _update_devices(sdir, args.device, lambda dev: dev.update(tls=args.switch))
    messages.append("tls switch %d on device(s) %s" % (args.switch, ",".join(ids)))


def _fault_health(sdir, args, messages):
    ids = _update_devices(sdir, args.device, lambda dev: dev.setdefault("faults", {}).update(health=None if args.off else args.status))
    messages.append("net health of device(s) %s %s" % (",".join(ids), "computed again" if args.off else "forced to %r" % args.status))


def _fault_chip_health(sdir, args, messages):
    code = " ".join(args.code.split()) if getattr(args, "code", None) else None
    info = getattr(args, "info", None) or None
    ids = _update_devices(sdir, args.device, lambda dev: dev.update(npu_health=args.status, npu_error_code=code, npu_error_info=info))
    messages.append("npu-smi Health of device(s) %s is %s%s" % (",".join(ids), args.status, ", Error Code %s" % code if code else ""))


def _fault_npu_smi_version(sdir, args, messages):
    def change(state):
        state["npu_smi_version"] = args.version

    store.update(sdir, change)
    versions.write_files(load(sdir))
    messages.append("npu-smi now prints version %s" % args.version)


def _fault_versions(sdir, args, messages):
    if args.firmware is None and args.toolkit is None and args.kernels is None and getattr(args, "compatibility", None) is None:
        raise SimError("fault versions takes --firmware V, --toolkit V, --kernels V (none: not there) and/or --compatibility")
    if args.device is not None and args.firmware is None:
        raise SimError("--device goes with --firmware (the firmware of those devices' NPUs)")

    def change(state):
        if args.firmware is not None:
            if args.device is None:
                state["firmware"] = args.firmware
            else:  # a board has one firmware: every chip of the NPUs holding these devices
                per_npu = CHIP_INFO[state["chip"]][1]
                npus = set(int(i) // per_npu for i in _devices_arg(state, args.device))
                for i, dev in state["devices"].items():
                    if int(i) // per_npu in npus:
                        dev["firmware"] = args.firmware
        if getattr(args, "compatibility", None) is not None:
            state["compatibility"] = args.compatibility
        if args.toolkit is not None:
            state["cann_toolkit"] = args.toolkit
        if args.kernels is not None:
            state["cann_kernels"] = args.kernels
        if (args.toolkit is not None or args.kernels is not None) and not state.get("cann_dir"):
            raise SimError("%s has no CANN directory for its version files (init --cann-dir DIR)" % sdir)

    store.update(sdir, change)
    versions.write_files(load(sdir))
    for name, value in (("firmware", args.firmware), ("CANN toolkit", args.toolkit), ("CANN kernels", args.kernels)):
        if value is not None:
            where = " on the NPU(s) of device(s) %s" % args.device if name == "firmware" and args.device else ""
            messages.append("%s version%s now %s" % (name, where, "absent" if value == versions.NONE else value))


def _fault_stale_conf(sdir, args, messages):
    def change(state):
        ids = _devices_arg(state, args.device)
        path = state["hccn_conf"]
        try:
            with open(path, encoding="utf-8") as f:
                original = f.read()
        except FileNotFoundError:
            original = ""
        if state["faults"].get("stale_conf") is None:
            state["faults"]["stale_conf"] = {"backup": original}
        items = []
        for i in ids:
            dev = state["devices"][i]
            value = ip_to_int(dev.get("ip") or "")
            if args.address:
                wrong = args.address
            elif value is not None:
                wrong = "%d.%d.%d.%d" % (value >> 24, (value >> 16) & 255, (value >> 8) & 255, ((value & 255) + 100) % 254 + 1)
            else:
                wrong = "198.18.255.%d" % (int(i) + 1)
            items.append(("address_%s" % i, wrong))
            items.append(("netmask_%s" % i, dev.get("netmask") or "255.255.255.0"))
        conf.set_keys(path, items)
        return ids

    ids = store.update(sdir, change)
    messages.append("hccn.conf now disagrees with device(s) %s" % ",".join(ids))


def _fault_latency(sdir, args, messages):
    if args.seconds < 0:
        raise SimError("--seconds must be >= 0")

    def change(state):
        state["faults"]["latency"] = args.seconds

    store.update(sdir, change)
    messages.append("every hccn_tool call now takes %.3f s" % args.seconds)


# ascend-sim fault KIND: one handler per kind, each given the state directory, the parsed arguments and the list
# its messages go to (printed unless -q). A new kind is a handler here and its subparser in build_parser.
FAULTS = {
    "driver-missing": _fault_driver_missing,
    "clear": _fault_clear,
    "link": _fault_link,
    "unreachable": _fault_unreachable,
    "error": _fault_error,
    "tls": _fault_tls,
    "health": _fault_health,
    "chip-health": _fault_chip_health,
    "npu-smi-version": _fault_npu_smi_version,
    "versions": _fault_versions,
    "stale-conf": _fault_stale_conf,
    "latency": _fault_latency,
}


def do_fault(args):
    sdir = os.path.abspath(args.state or state_dir())
    messages: list = []
    FAULTS[args.kind](sdir, args, messages)
    if not args.quiet:
        for m in messages:
            print("ascend-sim: %s" % m)
    return 0


def do_show(args):
    sdir = os.path.abspath(args.state or state_dir())
    state = load(sdir)
    if args.fabric:
        hosts = read_fabric(state["fabric"]) if state.get("fabric") else []
        json.dump(sorted(hosts, key=lambda h: str(h.get("host_id"))), sys.stdout, indent=2, sort_keys=True)
    else:
        json.dump(state, sys.stdout, indent=2, sort_keys=True)
    sys.stdout.write("\n")
    return 0


# --- argument parsing ------------------------------------------------------------------------


def _state_arg(parser, suppress=False):
    kwargs = {"default": argparse.SUPPRESS} if suppress else {"default": None}
    parser.add_argument("--state", metavar="DIR", help="state directory (default: $ASCEND_SIM_STATE or %s)" % DEFAULT_STATE_DIR, **kwargs)


def _variant_args(parser):
    """What npu-smi and hccn_tool print on a server (docs/simulator.md, "Real variants")."""
    parser.add_argument(
        "--npu-name", metavar="NAME", help="the Name npu-smi info prints (%s)" % "; ".join(", ".join(v) for v in NPU_NAMES.values())
    )
    parser.add_argument(
        "--driver",
        metavar="VERSION",
        help="the driver npu-smi prints (26.x: the 114-column table; 23.0.7 and 24.1.rc1 also get their version.info files)",
    )
    parser.add_argument("--tls-form", choices=TLS_FORMS, help="hccn_tool -tls -g with (full) or without (short) 'tls preconfigured[...]'")


def build_parser():
    p = argparse.ArgumentParser(prog="ascend-sim", description="Simulated Ascend NPU hosts for hccn_tool/npu-smi.")
    p.add_argument("-q", "--quiet", action="store_true", help="print nothing on success")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    ini = sub.add_parser("init", help="create (or check) one simulated host's state")
    ini.add_argument("--state", metavar="DIR", default=DEFAULT_STATE_DIR)
    ini.add_argument("--chip", type=chip_name, required=True, help="910A, 910B (A2) or A3")
    grp = ini.add_mutually_exclusive_group()
    grp.add_argument("--devices", type=int, help="number of devices, ids 0..N-1")
    grp.add_argument("--device-ids", help="explicit device ids, e.g. 0,1,2,3,8,9")
    ini.add_argument("--hccn-conf", default="/etc/hccn.conf", metavar="PATH")
    ini.add_argument("--mode", choices=("fabric", "bed"), default="fabric")
    ini.add_argument("--fabric", metavar="DIR", help="fabric directory shared by simulated servers")
    ini.add_argument("--latency", type=float, default=0.0, metavar="S", help="seconds per hccn_tool call")
    ini.add_argument("--settle", type=float, default=1.0, metavar="S", help="seconds net_health stays Init after netdetect is set")
    ini.add_argument("--host-id", metavar="NAME")
    ini.add_argument("--tls", type=int, choices=(0, 1), default=0, help="TLS switch of every device")
    ini.add_argument(
        "--driver-variant",
        choices=("current", "old"),
        default="current",
        help="old drivers print 'netdetect address:' instead of 'netdetect addr:'",
    )
    ini.add_argument("--cann-dir", metavar="DIR", help="write the CANN toolkit's and kernels' version files under DIR")
    _variant_args(ini)
    ini.add_argument("--force", action="store_true", help="reset an existing state (and empty hccn.conf)")
    ini.set_defaults(func=do_init)

    ins = sub.add_parser("install", help="write hccn_tool and npu-smi wrappers into a bin directory")
    ins.add_argument("--bin-dir", required=True, metavar="DIR")
    _state_arg(ins)
    ins.add_argument("--python", metavar="PATH", help="interpreter for the #! line (default: this one)")
    ins.set_defaults(func=do_install)

    clu = sub.add_parser("cluster", help="N simulated servers sharing one fabric under a directory")
    clu.add_argument("--root", required=True, metavar="DIR")
    clu.add_argument("--servers", type=int, required=True)
    clu.add_argument("--chip", type=chip_name, required=True)
    grp = clu.add_mutually_exclusive_group()
    grp.add_argument("--devices", type=int)
    grp.add_argument("--device-ids")
    clu.add_argument("--preset-ips", action="store_true", help="configure device IPs (198.18.0.0/15 plan)")
    clu.add_argument("--netdetect", choices=("gateway", "peer"), default="gateway", help="netdetect target set by --preset-ips")
    clu.add_argument("--latency", type=float, default=0.0, metavar="S")
    clu.add_argument("--settle", type=float, default=1.0, metavar="S")
    clu.add_argument("--tls", type=int, choices=(0, 1), default=0)
    clu.add_argument("--driver-variant", choices=("current", "old"), default="current")
    _variant_args(clu)
    clu.add_argument(
        "--variant",
        action="append",
        metavar="SPEC",
        help="one server's variant, server<N>:npu-name=NAME,driver=VERSION,tls-form=short (repeat, or join with ';')",
    )
    clu.add_argument("--python", metavar="PATH")
    clu.add_argument("--force", action="store_true")
    clu.set_defaults(func=do_cluster)

    fau = sub.add_parser("fault", help="inject or clear faults")
    _state_arg(fau)
    kinds = fau.add_subparsers(dest="kind", metavar="KIND")
    kinds.required = True

    k = kinds.add_parser("link", help="link of device(s) DOWN or UP")
    _state_arg(k, suppress=True)
    k.add_argument("--device", required=True, help="id, comma list or 'all'")
    g = k.add_mutually_exclusive_group(required=True)
    g.add_argument("--down", dest="up", action="store_false")
    g.add_argument("--up", dest="up", action="store_true")

    k = kinds.add_parser("unreachable", help="an IP no longer answers this host's devices")
    _state_arg(k, suppress=True)
    k.add_argument("--ip", required=True)
    k.add_argument("--device", help="only from this device (default: all devices)")
    k.add_argument("--remove", action="store_true")

    k = kinds.add_parser("error", help="device(s) fail every hccn_tool call")
    _state_arg(k, suppress=True)
    k.add_argument("--device", required=True)
    k.add_argument("--off", action="store_true")

    k = kinds.add_parser("tls", help="set the TLS switch of device(s) (mismatch with peers -> Socket fail)")
    _state_arg(k, suppress=True)
    k.add_argument("--device", required=True)
    k.add_argument("--switch", type=int, choices=(0, 1), required=True)

    k = kinds.add_parser("health", help="force the net_health answer of device(s)")
    _state_arg(k, suppress=True)
    k.add_argument("--device", required=True)
    g = k.add_mutually_exclusive_group(required=True)
    g.add_argument("--status", choices=HEALTH_CHOICES)
    g.add_argument("--off", action="store_true")

    k = kinds.add_parser("chip-health", help="the Health npu-smi info shows for device(s): OK, Warning, Alarm, Critical, UNKNOWN")
    _state_arg(k, suppress=True)
    k.add_argument("--device", required=True, help="id, comma list or 'all'")
    k.add_argument("--status", required=True, choices=NPU_HEALTH_CHOICES)
    k.add_argument("--code", help="the Error Code npu-smi info -t health prints (e.g. 'A4025021 8C03A000'; default NA)")
    k.add_argument("--info", help="its Error Information (default NA)")

    k = kinds.add_parser("npu-smi-version", help="the driver version npu-smi info prints in its header")
    _state_arg(k, suppress=True)
    k.add_argument("--version", required=True)

    k = kinds.add_parser("versions", help="the firmware npu-smi's board query prints, the CANN toolkit and kernels versions")
    _state_arg(k, suppress=True)
    k.add_argument("--firmware", metavar="V", help="firmware version (none: the board prints NA)")
    k.add_argument("--device", help="with --firmware: only the NPU(s) of these device(s) (id, comma list or 'all')")
    k.add_argument("--toolkit", metavar="V", help="CANN toolkit version (none: no ascend_toolkit_install.info)")
    k.add_argument("--kernels", metavar="V", help="CANN kernels version (none: no opp_kernel/version.info)")
    k.add_argument("--compatibility", choices=("OK", "NOK", "UNKNOWN"), help="the Compatibility a first-generation board prints")

    k = kinds.add_parser("stale-conf", help="rewrite hccn.conf so it disagrees with the device(s)")
    _state_arg(k, suppress=True)
    k.add_argument("--device", help="id, comma list or 'all' (default: all)")
    k.add_argument("--address", help="the wrong address to write (default: derived)")

    k = kinds.add_parser("latency", help="seconds every hccn_tool call takes")
    _state_arg(k, suppress=True)
    k.add_argument("--seconds", type=float, required=True)

    k = kinds.add_parser("driver-missing", help="remove the installed hccn_tool wrapper(s)")
    _state_arg(k, suppress=True)

    k = kinds.add_parser("clear", help="remove every fault (restores wrappers and hccn.conf)")
    _state_arg(k, suppress=True)
    fau.set_defaults(func=do_fault)

    sho = sub.add_parser("show", help="print the state (or the fabric) as JSON")
    _state_arg(sho)
    sho.add_argument("--fabric", action="store_true", help="print the hosts published in the fabric")
    sho.set_defaults(func=do_show)
    return p


def main(argv: list | None = None) -> int:
    args = build_parser().parse_args(argv)
    if not hasattr(args, "quiet"):
        args.quiet = False
    try:
        return args.func(args)
    except SimError as exc:
        sys.stderr.write("ascend-sim: %s\n" % exc)
        return 1
    except PermissionError as exc:
        sys.stderr.write("ascend-sim: %s (run as a user who may write there)\n" % exc)
        return 1
