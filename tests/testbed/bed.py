"""Multi-host test bed: N simulated NPU servers made of Linux namespaces on this machine.

Each host has its own network, mount and UTS namespaces, /etc, /usr/local/bin, /root, /run,
/tmp and sshd, so Ansible reaches it over real SSH. See docs/testbed.md.

    bed.py up --hosts 3 [--prefix P] [--devices 8] [--chip 910B] [--no-sim]
    bed.py down [--prefix P]
    bed.py status [--prefix P] [--json]
    bed.py exec [--prefix P] HOST -- CMD...
    bed.py cut|restore [--prefix P] HOST DEVICE
    bed.py mgmt-down|mgmt-up [--prefix P] HOST
    bed.py clock [--prefix P] HOST SECONDS

Run as root. Every address is in 198.18.0.0/15; the route ``unreachable 198.18.0.0/15`` is
added to the root namespace before any host exists and is never removed.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # mypy reads the checkout as packages; at run time this is a script beside bedlib/
    from tests.testbed.bedlib import files, host, lifecycle, net
    from tests.testbed.bedlib.layout import CHIPS, LayoutError
    from tests.testbed.bedlib.run import BedError
else:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bedlib import files, host, lifecycle, net
    from bedlib.layout import CHIPS, LayoutError
    from bedlib.run import BedError

REPO = Path(__file__).resolve().parents[2]
DEFAULT_PREFIX = os.environ.get("ASCEND_BED_PREFIX", "ab0000")


def _require_state(prefix: str) -> dict:
    state = lifecycle.load_state(prefix)
    if state is None:
        raise BedError(f"bed {prefix} is not up: run `bed.py up --hosts N --prefix {prefix}`")
    return state


def cmd_up(args: argparse.Namespace) -> int:
    started = time.monotonic()
    state = lifecycle.up(args.prefix, args.hosts, args.devices, args.chip, REPO, with_sim=not args.no_sim)
    print(f"bed {state['prefix']} up: {state['hosts']} hosts in {time.monotonic() - started:.2f}s")
    print(f"inventory: {state['inventory']}")
    print(f"ssh:       ssh -F {Path(state['inventory']).with_name('ssh_config')} h1")
    return 0


def cmd_down(args: argparse.Namespace) -> int:
    started = time.monotonic()
    lifecycle.down(args.prefix)
    print(f"bed {args.prefix} down in {time.monotonic() - started:.2f}s (guard route kept)")
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    state = lifecycle.load_state(args.prefix)
    leftovers = net.bed_netns(args.prefix) + net.bed_links(args.prefix)
    healthy = lifecycle.health(state) if state else {}
    if args.json:
        print(json.dumps({"state": state, "health": healthy, "guard_route": net.guard_route_present(), "objects": leftovers}, indent=2))
    elif state is None:
        print(f"bed {args.prefix}: down" + (f" (leftovers: {', '.join(leftovers)}; run down)" if leftovers else ""))
        others = [p for p in lifecycle.list_beds() if p != args.prefix]
        if others:
            print(f"other beds here: {', '.join(others)}")
    else:
        print(f"bed {args.prefix}: {state['hosts']} hosts x {state['devices']} {state['chip']}, inventory {state['inventory']}")
        for h, ok in healthy.items():
            print(f"  {h}  {state['mgmt_ips'][h]:15}  sshd pid {state['pids'][h]:<7}  {'up' if ok else 'DOWN'}")
        print(f"guard route unreachable 198.18.0.0/15: {'present' if net.guard_route_present() else 'MISSING'}")
    if state is None:
        return 3
    return 0 if all(healthy.values()) else 1


def cmd_exec(args: argparse.Namespace) -> int:
    state = _require_state(args.prefix)
    layout = lifecycle.layout_of(state)
    layout.check_host(args.host)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        raise BedError("nothing to run: bed.py exec HOST -- CMD...")
    pid = state["pids"][args.host]
    if not lifecycle.health(state)[args.host]:
        raise BedError(f"host {args.host} of bed {args.prefix} is not running: run `bed.py up` again")
    env = dict(os.environ, **files.faketime_env(host.clock_offset(layout, args.host), files.faketime_shared(layout, args.host)))
    os.execvpe("nsenter", ["nsenter", f"--target={pid}", "--net", "--mount", "--uts", "--wd=/root", "--", *command], env)
    return 127  # not reached


def cmd_link(args: argparse.Namespace) -> int:
    layout = lifecycle.layout_of(_require_state(args.prefix))
    net.set_fabric_port(layout, args.host, args.device, up=args.action == "restore")
    return 0


def cmd_mgmt(args: argparse.Namespace) -> int:
    layout = lifecycle.layout_of(_require_state(args.prefix))
    net.set_mgmt_link(layout, args.host, up=args.action == "mgmt-up")
    return 0


def cmd_clock(args: argparse.Namespace) -> int:
    state = _require_state(args.prefix)
    layout = lifecycle.layout_of(state)
    layout.check_host(args.host)
    if not lifecycle.health(state)[args.host]:
        raise BedError(f"host {args.host} of bed {args.prefix} is not running: run `bed.py up` again")
    host.set_clock(layout, args.host, state["pids"][args.host], args.seconds)
    return 0


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="bed.py", description=__doc__.split("\n\n", maxsplit=1)[0])
    sub = p.add_subparsers(dest="action", required=True)

    def add(name: str, help_text: str) -> argparse.ArgumentParser:
        sp = sub.add_parser(name, help=help_text)
        sp.add_argument("--prefix", default=DEFAULT_PREFIX, help=f"bed name, 2-8 chars (default {DEFAULT_PREFIX})")
        return sp

    sp = add("up", "create the bed (idempotent)")
    sp.add_argument("--hosts", type=int, required=True, help="number of hosts, 2..16")
    sp.add_argument("--devices", type=int, default=8, help="NPUs per host (default 8)")
    sp.add_argument("--chip", choices=CHIPS, default="910B")
    sp.add_argument("--no-sim", action="store_true", help="bare hosts without the simulator")
    sp.set_defaults(func=cmd_up)
    add("down", "remove the bed (idempotent; keeps the guard route)").set_defaults(func=cmd_down)
    sp = add("status", "show the bed; exit 0 healthy, 1 degraded, 3 down")
    sp.add_argument("--json", action="store_true")
    sp.set_defaults(func=cmd_status)
    sp = add("exec", "run a command inside a host's namespaces")
    sp.add_argument("host")
    sp.add_argument("command", nargs=argparse.REMAINDER)
    sp.set_defaults(func=cmd_exec)
    for name, what in (("cut", "take a parameter-plane link down"), ("restore", "bring it back up")):
        sp = add(name, what)
        sp.add_argument("host")
        sp.add_argument("device", type=int)
        sp.set_defaults(func=cmd_link)
    for name, what in (("mgmt-down", "take a host's management link down (it stops answering)"), ("mgmt-up", "bring it back up")):
        sp = add(name, what)
        sp.add_argument("host")
        sp.set_defaults(func=cmd_mgmt)
    sp = add("clock", "shift a host's wall clock (libfaketime) for everything started on it from now on; 0 undoes it")
    sp.add_argument("host")
    sp.add_argument("seconds", type=int, help="offset in whole seconds, e.g. -30 (behind) or 90 (ahead)")
    sp.set_defaults(func=cmd_clock)
    return p


def main(argv: list | None = None) -> int:
    args = parser().parse_args(argv)
    if os.geteuid() != 0:
        print("bed.py: run as root (it creates namespaces, bridges and routes)", file=sys.stderr)
        return 2
    try:
        return args.func(args)
    except (BedError, LayoutError) as exc:
        print(f"bed.py {args.action}: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
