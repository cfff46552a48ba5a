"""The simulated ``hccn_tool``'s entry point: ``bin/hccn_tool`` and the wrappers ``ascend-sim install`` writes.

It joins the two halves that must not import each other: the commands (``hccn``, run by
``answers`` too) and the state writes (``store``, which renders the answers after each one).
"""

from __future__ import annotations

import sys

from . import hccn
from ._rt import SimError, state_dir


def _write(sdir: str, func):
    """Save a set command's change: ``store.update`` (imported here, on the set path only: json, fcntl)."""
    from . import store

    return store.update(sdir, func)


def main(argv: list | None = None, default_state: str | None = None) -> int:
    """Run one hccn_tool command line (``sys.argv[1:]`` by default) and return its exit status."""
    if argv is None:
        argv = sys.argv[1:]
    out = hccn.Out()
    try:
        rc = hccn.run(argv, state_dir(default_state), out, writer=_write)
    except SimError as exc:
        out.flush()
        sys.stderr.write("ascend-sim: %s\n" % exc)
        return 125
    out.flush()
    return rc
