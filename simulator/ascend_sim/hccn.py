"""The simulated ``hccn_tool``.

Argument checking follows the open-sourced tool (hicann/driver ``src/custom/network/hccn``):
the major command is looked up first, then the device id, then the command checks its own
argument count and options. Exit status is the tool's internal error code modulo 256; errors go
to stderr, data and parameter help to stdout, every line ends in ``\\n``.

Hot path: get commands import nothing beyond ``_rt`` (posix, marshal) and never spawn a process in
fabric mode. Set commands import ``conf`` lazily and save the state through the writer ``run`` is
given (``hccn_main`` passes ``store.update``, imported lazily): ``store`` renders the answers, which
run this module, so this module imports neither.
"""

from __future__ import annotations

import sys

from ._rt import UNSET_IP, SimError, getenv, ip_to_int, load, mask_prefix, read_fabric, same_subnet

# --- exit codes (internal code & 0xFF) -------------------------------------------------------
RC_MAJOR_TYPE = 1  # 0x1001
RC_MAJOR_NUM = 2  # 0x1002
RC_MAJOR_INVALID = 3  # 0x1003
RC_DEV_ID = 4  # 0x1004
RC_OP_NOT_SUPPORT = 3  # 0x2003
RC_COUNT = 4  # 0x2004
RC_IP_INVALID = 6  # 0x2006
RC_IP_CONFLICT = 7  # 0x2007
RC_GW_SEGMENT = 8  # 0x2008
RC_EXEC = 1  # 0x4001 UDA_DSMI_EXE_ERR
RC_NO_GATEWAY = 2  # 0x4002
RC_NO_IPCONF = 13  # 0x400D
RC_CONF_ACCESS = 29  # 0x301D UDA_TOOL_ACCESS_CONF_FILE_ERR
RC_BROADCAST = 37  # 0x3025 UDA_TOOL_COFNIG_BROAD_ADDRESS_ERR

MSG_EXEC = "Command execute failed!"
MSG_SUCCESS = "Cmd executed successfully!"
MSG_HELP_HINT = "Enter [ hccn_tool -h ] for more details."

# Parameter help the tool prints after "Get unknown option!" / a wrong argument count
# (IPv4 build, i.e. without HCCN_TOOL_ADAPT_IPV6).
HELP = {
    "-ip": (
        "   [-s]                 : set ip cfg \n"
        "       address %s       : set IPv4 ip address, such as x.x.x.x\n"
        "       netmask %s       : set IPv4 ip netmask, such as x.x.x.x\n"
        "   [-g]                 : get ip address and netmask/prefix_length \n"
    ),
    "-gateway": (
        "   [-s]                : set gateway cfg \n"
        "       gateway %s      : set IPv4 gateway, such as x.x.x.x\n"
        "   [-g]                : get gateway address \n"
    ),
    "-netdetect": (
        "   [-s]                : set net detect cfg \n"
        "       address %s      : set net detect IPv4 ip address, such as x.x.x.x\n"
        "   [-g]                : get net detect cfg \n"
    ),
    "-mac": ("   [-s]        : set mac cfg\n       mac %s  : set mac address, such as xx:xx:xx:xx:xx:xx\n   [-g]        : get mac cfg\n"),
    "-cfg": "   recovery    : recovery cfg \n   status      : config status \n",
    "-link": (
        "   [-s]                   : set the eth ports link status\n"
        "       down               : shut down eth port \n"
        "       up                 : start up eth port \n"
        "   [-g]                   : get the eth ports link status, UP or DOWN \n"
    ),
    "-net_health": "   [-g]        : get net health status\n",
    "-tls": ("   [-s]        : set tls cfg\n       enable %d : set tls enable, 0: disable, 1: enable\n   [-g]        : get tls cfg\n"),
    "-ping": (
        "   [-g]                : get ping result\n"
        "       address %s      : set net detect IPv4 ip address, such as x.x.x.x\n"
        "      pkt %d           : ping cfg, the packet data length, [0 ~ 65507]\n"
    ),
}
HELP_ALL_CFG = "    recovery   : recovery cfg \n"
DEVICE_COMMANDS = ("-ip", "-gateway", "-netdetect", "-mac", "-cfg", "-link", "-net_health", "-tls", "-ping")


class HccnError(Exception):
    """An hccn_tool failure: ``lines`` go to stderr, ``help_for`` prints the parameter help."""

    def __init__(self, rc, *lines, help_for=None):
        Exception.__init__(self, lines[0] if lines else "")
        self.rc = rc
        self.lines = lines
        self.help_for = help_for


class Out:
    """Collects stdout and stderr so that they are written once at the end."""

    def __init__(self):
        self.out = []
        self.err = []

    def info(self, line):
        self.out.append(line + "\n")

    def error(self, line):
        self.err.append(line + "\n")

    def flush(self):
        if self.out:
            sys.stdout.write("".join(self.out))
            sys.stdout.flush()
        if self.err:
            sys.stderr.write("".join(self.err))
            sys.stderr.flush()


def _param_help(out, cmd, attr="-i"):
    if attr == "-a":
        text = HELP_ALL_CFG
        out.info("[ hccn_tool -a devid -cfg ] needs the following parameters:")
    else:
        text = HELP[cmd]
        out.info("[ hccn_tool -i devid %s ] needs the following parameters:" % cmd)
    out.info(text)


def _help(out):
    for cmd in DEVICE_COMMANDS:
        out.info("hccn_tool -i devid %s" % cmd)
        out.info(HELP[cmd])
    out.info("hccn_tool -a  -cfg")
    out.info(HELP_ALL_CFG)


# --- state helpers ---------------------------------------------------------------------------


def _latency(state):
    env = getenv("ASCEND_SIM_LATENCY")
    if env:
        try:
            return float(env)
        except ValueError:
            pass
    return state_latency(state)


def state_latency(state):
    """Seconds every call takes by the state alone: the latency fault, else ``latency``."""
    faults = state.get("faults") or {}
    if faults.get("latency") is not None:
        return float(faults["latency"])
    return float(state.get("latency") or 0.0)


def _sleep(seconds):
    if seconds > 0:
        import time

        time.sleep(seconds)


def _link_up(state, dev_id, dev):
    if dev.get("link", "UP") != "UP":
        return False
    if state.get("mode") == "bed":
        from . import bed

        return bed.link_up(dev_id)
    return True


def _valid_host_ip(text: str) -> int | None:
    """What hccn_tool accepts as a device address: a unicast, non-loopback dotted quad."""
    value = ip_to_int(text)
    if value is None:
        return None
    first = value >> 24
    if first in {0, 127} or first >= 224:
        return None
    return value


def _valid_netmask(text: str) -> int | None:
    value = ip_to_int(text)
    if value is None or value == 0 or mask_prefix(value) is None:
        return None
    return value


# --- reachability ----------------------------------------------------------------------------


def _find_target(state, target):
    """(device id on this host or None, device dict) of the device that owns ``target``, or None."""
    for dev_id, dev in state["devices"].items():
        if dev.get("ip") == target:
            return dev_id, dev
    fabric = state.get("fabric")
    if not fabric:
        return None
    for host in read_fabric(fabric):  # includes this host's own entry: same data as above
        for dev in host.get("devices", {}).values():
            if dev.get("ip") == target:
                return None, dev
    return None


def _blocked(state, dev_id, target):
    faults = state.get("faults") or {}
    for entry in faults.get("unreachable", ()):
        if entry.get("ip") == target and entry.get("device") in (None, int(dev_id)):
            return True
    return False


def _reach(state, dev_id, dev, target, check_tls):
    """Return a net health word for a probe from ``dev`` to ``target`` (fabric or bed mode)."""
    if not _link_up(state, dev_id, dev):
        return "Fault"
    if _blocked(state, dev_id, target):
        return "Receive timeout"
    own_ip = dev.get("ip")
    if not own_ip:
        return "Receive timeout"
    if state.get("mode") == "bed":
        from . import bed

        return "Success" if bed.ping(dev_id, target) else "Receive timeout"
    mask = dev.get("netmask") or "255.255.255.255"
    if target == dev.get("gateway"):
        return "Success"  # the switch's gateway interface answers while our link is up
    same = same_subnet(own_ip, target, mask)
    if not same and not dev.get("gateway"):
        return "Receive timeout"  # no route off the subnet
    found = _find_target(state, target)
    if found is None:
        return "Receive timeout"
    local_id, peer = found
    if peer.get("link", "UP") != "UP":
        return "Receive timeout"
    if state.get("chip") == "A3" and local_id is not None and local_id != dev_id and int(local_id) // 2 == int(dev_id) // 2:
        return "Receive timeout"  # the two dies of one A3 NPU do not reach each other over RoCE
    if check_tls and int(peer.get("tls", 0)) != int(dev.get("tls", 0)):
        return "Socket fail"
    return "Success"


def net_health(state: dict, dev_id: str, dev: dict, now: float | None = None) -> str:
    forced = (dev.get("faults") or {}).get("health")
    if forced:
        return forced
    target = dev.get("netdetect")
    if not target or target == UNSET_IP:
        return "Init"
    if now is None:
        import time

        now = time.time()
    settle = float(state.get("settle", 1.0))
    if now - float(dev.get("netdetect_at") or 0.0) < settle:
        return "Init"
    return _reach(state, dev_id, dev, target, True)


# --- commands --------------------------------------------------------------------------------

# hccn_tool's two answers to words it does not take after a command (reference section 1), with the command's help.
USAGE_ERRORS = {
    RC_COUNT: "The total count of input parameters is wrong!",
    RC_OP_NOT_SUPPORT: "Get unknown option!",
}


def _usage(rc, option):
    """The usage error ``rc`` (``RC_COUNT`` or ``RC_OP_NOT_SUPPORT``) for ``option``, its help after it."""
    return HccnError(rc, USAGE_ERRORS[rc], help_for=option)


def _action(args, option, *known):
    """The word after ``option`` (``-s``, ``-g``, ...): none is a count error, one not ``known`` an unknown option."""
    if not args:
        raise _usage(RC_COUNT, option)
    if args[0] not in known:
        raise _usage(RC_OP_NOT_SUPPORT, option)
    return args[0]


def _set_one(ctx, args, option, keyword):
    """``option -s keyword value``: the usage errors for other words, then the device's call; the value."""
    if len(args) != 3:
        raise _usage(RC_COUNT, option)
    if args[1] != keyword:
        raise _usage(RC_OP_NOT_SUPPORT, option)
    ctx.device_call()
    return args[2]


def _save_one(ctx, change, key, value):
    """A set command's end: the state through ``change``, ``key_<device>=value`` in hccn.conf, the tool's success."""
    ctx.update(change)
    from . import conf

    conf.set_keys(ctx.conf_path, [("%s_%s" % (key, ctx.dev_id), value)])
    ctx.out.info(MSG_SUCCESS)
    return 0


def _get_only(ctx, args, option, extra=RC_COUNT):
    """``option -g`` and nothing more (anything more: the usage error ``extra``), then the device's call."""
    if len(args) != 1:
        raise _usage(extra, option)
    ctx.device_call()
    return ctx.dev


def _cmd_ip(ctx, args):
    if _action(args, "-ip", "-s", "-g") == "-s":
        if len(args) != 5:
            raise _usage(RC_COUNT, "-ip")
        values = {}
        for i in (1, 3):
            if args[i] not in ("address", "netmask"):
                raise _usage(RC_OP_NOT_SUPPORT, "-ip")
            values[args[i]] = args[i + 1]
        return _set_ip(ctx, values.get("address", ""), values.get("netmask", ""))
    dev = _get_only(ctx, args, "-ip")
    if not dev.get("ip"):
        raise HccnError(RC_NO_IPCONF, "Get ipconf failed, because no ip was preset there!")
    ctx.out.info("ipaddr:%s" % dev["ip"])
    ctx.out.info("netmask:%s" % dev["netmask"])
    return 0


def _set_ip(ctx, address, netmask):
    ctx.device_call()
    parsed = ip_to_int(address)
    if parsed is not None:
        # conflict checks come first in the real tool (other devices, then the vNIC range)
        lo, hi = (8, 16) if int(ctx.dev_id) >= 8 else (0, 8)
        for other_id, other in ctx.state["devices"].items():
            if other_id != ctx.dev_id and lo <= int(other_id) < hi and other.get("ip") == address:
                raise HccnError(RC_IP_CONFLICT, "The ip address configured is conflicted!")
        if (parsed & 0xFFFFFF00) == 0xC0A80100:  # 192.168.1.0/24: host side of the device vNIC
            raise HccnError(RC_IP_CONFLICT, "The ip address configured is conflicted!")
    addr_int, mask_int = _valid_host_ip(address), _valid_netmask(netmask)
    prefix = None if mask_int is None else mask_prefix(mask_int)
    if addr_int is None or mask_int is None or prefix is None:
        raise HccnError(RC_IP_INVALID, "The ip address you configured is invalid!")
    host_mask = ~mask_int & 0xFFFFFFFF
    if host_mask > 1 and (addr_int & host_mask) in (0, host_mask):  # network or broadcast address
        raise HccnError(RC_IP_INVALID, "The ip address you configured is invalid!")
    bed_mode = ctx.state.get("mode") == "bed"
    if bed_mode:
        from . import bed

        bed.check_guard(address)  # before anything changes

    drop_gateway = []

    def change(state):
        dev = state["devices"][ctx.dev_id]
        for other_id, other in state["devices"].items():  # re-check under the lock
            if other_id != ctx.dev_id and other.get("ip") == address:
                raise HccnError(RC_IP_CONFLICT, "The ip address configured is conflicted!")
        dev["ip"] = address
        dev["netmask"] = netmask
        gw = dev.get("gateway")
        if gw and ((ip_to_int(gw) or 0) & mask_int) != (addr_int & mask_int):
            dev["gateway"] = None  # the route goes away with the old subnet
            drop_gateway.append(gw)

    ctx.update(change)
    if bed_mode:
        bed.apply_address(ctx.dev_id, address, prefix)
    from . import conf

    key = ctx.dev_id
    if drop_gateway:
        conf.delete_keys(ctx.conf_path, ["gateway_%s" % key])
    conf.set_keys(ctx.conf_path, [("address_%s" % key, address), ("netmask_%s" % key, netmask)])
    ctx.out.info(MSG_SUCCESS)
    return 0


def _cmd_gateway(ctx, args):
    if _action(args, "-gateway", "-s", "-g") == "-s":
        gateway = _set_one(ctx, args, "-gateway", "gateway")
        if ip_to_int(gateway) is None:
            raise HccnError(RC_IP_INVALID, "The ip address you configured is invalid!")
        dev = ctx.dev
        if not dev.get("ip"):
            raise HccnError(RC_NO_IPCONF, "Get ipconf failed, because no ip was preset there!")
        if not same_subnet(dev["ip"], gateway, dev["netmask"]):
            raise HccnError(RC_GW_SEGMENT, "The segment of configured gateway doesn't match that of the configured ip adress!")

        def change(state):
            state["devices"][ctx.dev_id]["gateway"] = gateway

        return _save_one(ctx, change, "gateway", gateway)
    gateway = _get_only(ctx, args, "-gateway").get("gateway")
    if not gateway:
        raise HccnError(RC_NO_GATEWAY, "Get gateway failed, because no gateway was preset there!")
    ctx.out.info("default gateway:%s, Iface:eth%s" % (gateway, ctx.dev_id))
    return 0


def _cmd_netdetect(ctx, args):
    if _action(args, "-netdetect", "-s", "-g") == "-s":
        address = _set_one(ctx, args, "-netdetect", "address")
        value = ip_to_int(address)
        if value is None:
            raise HccnError(RC_IP_INVALID, "The ip address you configured is invalid!")
        if value == 0xFFFFFFFF:
            raise HccnError(RC_BROADCAST, "Can not config broadcast address!")
        import time

        now = time.time()

        def change(state):
            dev = state["devices"][ctx.dev_id]
            dev["netdetect"] = None if address == UNSET_IP else address
            dev["netdetect_at"] = now

        return _save_one(ctx, change, "netdetect", address)
    dev = _get_only(ctx, args, "-netdetect")
    label = "netdetect address" if ctx.state.get("driver_variant") == "old" else "netdetect addr"
    ctx.out.info("%s: %s" % (label, dev.get("netdetect") or UNSET_IP))
    return 0


def _cmd_net_health(ctx, args):
    if len(args) != 1:
        raise _usage(RC_COUNT, "-net_health")
    if args[0] != "-g":
        raise _usage(RC_OP_NOT_SUPPORT, "-net_health")
    ctx.device_call()
    ctx.out.info("net health status: %s" % net_health(ctx.state, ctx.dev_id, ctx.dev))
    return 0


def _cmd_link(ctx, args):
    _action(args, "-link", "-g")
    dev = _get_only(ctx, args, "-link", extra=RC_OP_NOT_SUPPORT)  # the real tool's answer to words after -link -g
    ctx.out.info("link status: %s" % ("UP" if _link_up(ctx.state, ctx.dev_id, dev) else "DOWN"))
    return 0


def _cmd_mac(ctx, args):
    _action(args, "-mac", "-g")
    ctx.out.info("mac addr: %s" % _get_only(ctx, args, "-mac")["mac"])
    return 0


def _cmd_tls(ctx, args):
    _action(args, "-tls", "-g")
    dev = _get_only(ctx, args, "-tls")
    if ctx.state.get("tls_form") == "short":
        # the form without the preconfigured field (the HCCL user guide's TLS-inconsistency page, hcclug_000045; its
        # certificate lines are not simulated)
        ctx.out.info(
            "dev_id:%s, tls switch[%d](0:disable, 1:enable), tls alarm time threshold[%d]days"
            % (ctx.dev_id, int(dev.get("tls", 0)), int(dev.get("tls_alarm", 60)))
        )
        return 0
    ctx.out.info(
        "dev_id:%s, tls switch[%d](0:disable, 1:enable), tls preconfigured[%d](0:non-preset, 1:preset), "
        "tls alarm time threshold[%d]days"
        % (ctx.dev_id, int(dev.get("tls", 0)), int(dev.get("tls_preset", 1)), int(dev.get("tls_alarm", 60)))
    )
    return 0


def _ping_time(target, seq):
    value = (ip_to_int(target) or 0) * 2654435761 + seq * 40503
    return 0.040 + (value % 90) / 1000.0


def _cmd_ping(ctx, args):
    if len(args) < 3:
        raise _usage(RC_COUNT, "-ping")
    if args[0] != "-g":
        raise _usage(RC_OP_NOT_SUPPORT, "-ping")
    target = None
    i = 1
    while i < len(args):
        if args[i] in ("address", "pkt") and i + 1 < len(args):
            if args[i] == "address":
                target = args[i + 1]
            i += 2
            continue
        raise _usage(RC_OP_NOT_SUPPORT, "-ping")
    if target is None:
        raise _usage(RC_COUNT, "-ping")
    ctx.device_call()
    if _valid_host_ip(target) is None:
        raise HccnError(RC_IP_INVALID, "The ip address you configured is invalid!")
    ok = _reach(ctx.state, ctx.dev_id, ctx.dev, target, False) == "Success"
    ctx.out.info("device %s PING %s" % (ctx.dev_id, target))
    received = 0
    for seq in range(3):
        if ok:
            received += 1
            ctx.out.info("recv seq=%d,time=%.6fms" % (seq, _ping_time(target, seq)))
        else:
            ctx.out.info("recv time out seq=%d" % seq)
    ctx.out.info("3 packets transmitted, %d received, %.2f%% packet loss" % (received, (3 - received) * 100.0 / 3))
    if not ok:
        raise HccnError(RC_EXEC, MSG_EXEC)
    return 0


def _recover(ctx, dev_ids):
    """Re-apply hccn.conf (address/netmask, netdetect, gateway) to ``dev_ids``."""
    from . import conf

    values = conf.read(ctx.conf_path)
    import time

    now = time.time()
    bed_apply = []

    def change(state):
        for dev_id in dev_ids:
            dev = state["devices"][dev_id]
            address, netmask = values.get("address_%s" % dev_id), values.get("netmask_%s" % dev_id)
            mask_int = _valid_netmask(netmask) if address and netmask else None
            prefix = None if mask_int is None else mask_prefix(mask_int)
            if address and netmask and _valid_host_ip(address) is not None and prefix is not None:
                dev["ip"], dev["netmask"] = address, netmask
                bed_apply.append((dev_id, address, prefix))
            netdetect = values.get("netdetect_%s" % dev_id)
            if netdetect and ip_to_int(netdetect) is not None and netdetect != dev.get("netdetect"):
                dev["netdetect"] = netdetect
                dev["netdetect_at"] = now
            gateway = values.get("gateway_%s" % dev_id)
            if gateway and dev.get("ip") and ip_to_int(gateway) is not None and same_subnet(gateway, dev["ip"], dev["netmask"]):
                dev["gateway"] = gateway

    ctx.update(change)
    if ctx.state.get("mode") == "bed":
        from . import bed

        for dev_id, address, prefix in bed_apply:
            bed.apply_address(dev_id, address, prefix)
    ctx.out.info(MSG_SUCCESS)
    return 0


def _exists(path):
    import os

    return os.path.exists(path)


def _cmd_cfg(ctx, args):
    _action(args, "-cfg", "recovery")
    if len(args) != 1:
        raise _usage(RC_COUNT, "-cfg")
    if not _exists(ctx.conf_path):
        raise HccnError(
            RC_CONF_ACCESS,
            "The hccn.conf can't access, cmd execute failed! pls check the conf file or cmd run permission.",
        )
    ctx.device_call()
    return _recover(ctx, [ctx.dev_id])


COMMANDS = {
    "-ip": _cmd_ip,
    "-gateway": _cmd_gateway,
    "-netdetect": _cmd_netdetect,
    "-net_health": _cmd_net_health,
    "-link": _cmd_link,
    "-mac": _cmd_mac,
    "-tls": _cmd_tls,
    "-ping": _cmd_ping,
    "-cfg": _cmd_cfg,
}


class Context:
    """What a command needs: the state, the device, the conf path, and where output goes."""

    def __init__(self, sdir, state, dev_id, out, writer=None):
        self.sdir = sdir
        self.writer = writer
        self.state = state
        self.dev_id = dev_id
        self.dev = state["devices"].get(dev_id) if dev_id is not None else None
        self.out = out
        self.conf_path = state.get("hccn_conf") or "/etc/hccn.conf"
        self.no_latency = False
        self._called = False

    def device_call(self):
        """The command reaches the device: simulated latency, then injected device errors."""
        if self._called:
            return
        self._called = True
        if not self.no_latency:
            _sleep(_latency(self.state))
        if self.dev is not None and (self.dev.get("faults") or {}).get("error"):
            raise HccnError(RC_EXEC, MSG_EXEC)

    def update(self, func):
        """Apply ``func`` to a fresh copy of the state under the writer lock (``writer``: ``store.update``)."""
        if self.writer is None:
            raise SimError("this hccn_tool command changes the state, and run() was given no writer")
        self.writer(self.sdir, func)
        self.state = load(self.sdir)
        if self.dev_id is not None:
            self.dev = self.state["devices"][self.dev_id]


def run(argv: list, sdir: str, out: Out, no_latency: bool = False, state: dict | None = None, writer=None) -> int:
    """Execute one hccn_tool command line (without argv[0]); return the exit status.

    ``state``: the already loaded state of ``sdir`` (answers.py renders many get commands of one).
    ``writer``: what a set command saves the state with, ``store.update`` (``hccn_main``); this module
    imports neither the store nor the answers, which import it (answers.py renders through ``run``).
    """
    try:
        if not argv:
            raise HccnError(RC_MAJOR_NUM, "Get invalid major cmd number. Please check your input.", MSG_HELP_HINT)
        if len(argv) == 1 and argv[0] in ("-h", "--help"):
            _help(out)
            return 0
        if argv[0] == "-i":
            if len(argv) < 3 or argv[2] not in COMMANDS:
                raise HccnError(RC_MAJOR_INVALID, "Get invalid major cmd.", MSG_HELP_HINT)
            phy = argv[1]
            if state is None:
                state = load(sdir)
            if len(phy) > 2 or not (phy.isascii() and phy.isdigit()) or str(int(phy)) not in state["devices"]:
                raise HccnError(RC_DEV_ID, "Get invalid device id.")
            ctx = Context(sdir, state, str(int(phy)), out, writer)
            ctx.no_latency = no_latency
            return COMMANDS[argv[2]](ctx, argv[3:])
        if argv[0] == "-a":
            if len(argv) < 2 or argv[1] != "-cfg":
                raise HccnError(RC_MAJOR_INVALID, "Get invalid major cmd.", MSG_HELP_HINT)
            args = argv[2:]
            _action(args, "-a", "recovery")
            if len(args) != 1:
                raise _usage(RC_COUNT, "-a")
            state = load(sdir)
            ctx = Context(sdir, state, None, out, writer)
            ctx.no_latency = no_latency
            if not _exists(ctx.conf_path):
                raise HccnError(
                    RC_CONF_ACCESS,
                    "The hccn.conf can't access, cmd execute failed! pls check the conf file or cmd run permission.",
                )
            ctx.device_call()
            for dev in state["devices"].values():
                if (dev.get("faults") or {}).get("error"):
                    out.info("Recovery failed. Check '/var/log/hccn_tool/hccn_config.log' for details.")
                    raise HccnError(RC_EXEC, MSG_EXEC)
            return _recover(ctx, sorted(state["devices"], key=int))
        raise HccnError(
            RC_MAJOR_TYPE,
            'Get invalid major cmd type. The valid major cmd type should be "-a" or "-i".',
            MSG_HELP_HINT,
        )
    except HccnError as exc:
        for line in exc.lines:
            out.error(line)
        if exc.help_for:
            if exc.help_for == "-a":
                _param_help(out, "-cfg", attr="-a")
            else:
                _param_help(out, exc.help_for)
        return exc.rc
