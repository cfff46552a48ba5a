"""The simulated ``npu-smi`` (``info -l`` now; the box table follows)."""

import sys

from ._rt import SimError, load, state_dir


def info_list(state):
    ids = sorted((int(i) for i in state["devices"]))
    lines = ["%-31s: %d" % ("Total Count", len(ids)), ""]
    for i in ids:
        lines.append("%-31s: %d" % ("NPU ID", i))
        lines.append("%-31s: %d" % ("Chip Count", 1))
        lines.append("")
    return "\n".join(lines) + "\n"


def main(argv=None, default_state=None):
    if argv is None:
        argv = sys.argv[1:]
    try:
        state = load(state_dir(default_state))
    except SimError as exc:
        sys.stderr.write("ascend-sim: %s\n" % exc)
        return 125
    if argv == ["info", "-l"]:
        sys.stdout.write(info_list(state))
        return 0
    sys.stderr.write("npu-smi: unsupported command\n")
    return 1
