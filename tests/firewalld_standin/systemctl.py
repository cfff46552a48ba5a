# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Stand-in for ``systemctl``, for the firewalld unit only (the bed hosts have no systemd).

is-active / is-enabled / start / stop / enable / disable [--now] firewalld[.service], with
systemctl's exit codes (is-active: 0 active, 3 inactive; is-enabled: 0 enabled, 1 disabled;
unknown unit: 4 for is-active, 1 "not-found" for is-enabled). Any other unit is refused.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # mypy reads the checkout as packages; at run time this is a script beside _standin.py
    from tests.firewalld_standin import _standin as s
else:
    sys.path.insert(0, os.path.dirname(os.path.realpath(__file__)))
    import _standin as s


def main(argv):
    s.record("systemctl", argv)
    now = "--now" in argv
    args = [a for a in argv if a != "--now" and not a.startswith("-")]
    if len(args) != 2:
        s.out("systemctl stand-in: expected VERB UNIT, got %r" % argv, 2, err=True)
    verb, unit = args
    if unit not in ("firewalld", "firewalld.service"):
        s.out("systemctl stand-in: only the firewalld unit exists here (asked for %s)" % unit, 4, err=True)
    state = s.load()
    if not state["installed"]:
        if verb == "is-enabled":
            s.out("not-found", 1)
        s.out("Unit firewalld.service could not be found.", 4, err=True)
    if verb == "is-active":
        s.out("active" if state["active"] else "inactive", 0 if state["active"] else 3)
    if verb == "is-enabled":
        s.out("enabled" if state["enabled"] else "disabled", 0 if state["enabled"] else 1)
    if verb in ("start", "stop"):
        state["active"] = verb == "start"
    elif verb in ("enable", "disable"):
        state["enabled"] = verb == "enable"
        if now:
            state["active"] = verb == "enable"
    else:
        s.out("systemctl stand-in: unknown verb %s" % verb, 2, err=True)
    if verb == "start" or (verb == "enable" and now):
        state["runtime"] = {z: list(p) for z, p in state["permanent"].items()}  # a start loads the saved config
    s.save(state)
    s.out("")


if __name__ == "__main__":
    main(sys.argv[1:])
