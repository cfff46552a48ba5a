# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Stand-in for firewalld's ``firewall-cmd``: the subset the firewall role uses, with real exit codes.

--state; [--permanent] [--zone=Z] --list-ports | --add-port=P/tcp | --remove-port=P/tcp;
--reload; --get-default-zone. Exit 252 (NOT_RUNNING) while the service is stopped.
"""

from __future__ import annotations

import os
import re
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # mypy reads the checkout as packages; at run time this is a script beside _standin.py
    from tests.firewalld_standin import _standin as s
else:
    sys.path.insert(0, os.path.dirname(os.path.realpath(__file__)))
    import _standin as s

NOT_RUNNING = 252
INVALID_PORT = 103
INVALID_ZONE = 112
PORT = re.compile(r"^[0-9]{1,5}(-[0-9]{1,5})?/(tcp|udp|sctp|dccp)$")


def main(argv):
    s.record("firewall-cmd", argv)
    state = s.load()
    if argv == ["--state"]:
        s.out("running" if state["active"] else "not running", 0 if state["active"] else NOT_RUNNING)
    if not state["active"]:
        s.out("FirewallD is not running", NOT_RUNNING, err=True)
    permanent = "--permanent" in argv
    zone = state["default_zone"]
    action = None
    for arg in argv:
        if arg.startswith("--zone="):
            zone = arg.split("=", 1)[1]
        elif arg not in ("--permanent",):
            action = arg
    if action == "--get-default-zone":
        s.out(zone)
    if action == "--reload":
        state["runtime"] = {z: list(p) for z, p in state["permanent"].items()}
        s.save(state)
        s.out("success")
    store = state["permanent" if permanent else "runtime"]
    if zone not in store:
        s.out("Error: INVALID_ZONE: %s" % zone, INVALID_ZONE, err=True)
    ports = store[zone]
    if action == "--list-ports":
        s.out(" ".join(ports))
    if action and action.startswith(("--add-port=", "--remove-port=")):
        name, port = action[2:].split("=", 1)
        if not PORT.match(port):
            s.out("Error: INVALID_PORT: %s" % port, INVALID_PORT, err=True)
        key = port.replace("/", ":")
        if name == "add-port":
            if port in ports:
                s.out("Warning: ALREADY_ENABLED: %s\nsuccess" % key)
            ports.append(port)
        else:
            if port not in ports:
                s.out("Warning: NOT_ENABLED: %s\nsuccess" % key)
            ports.remove(port)
        s.save(state)
        s.out("success")
    s.out(
        "usage: see firewall-cmd(1); this stand-in knows --state, --list-ports, --add-port, --remove-port, --reload, --get-default-zone",
        2,
        err=True,
    )


if __name__ == "__main__":
    main(sys.argv[1:])
