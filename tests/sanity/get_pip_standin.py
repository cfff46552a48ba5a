"""Offline stand-in for ansible-test's get-pip bootstrap script.

ansible-test downloads ``get-pip-<ver>.py`` from ci-files.testing.ansible.com to bootstrap pip in
the virtual environments it makes for sanity tests; that host is unreachable here. This script
accepts the same arguments (pip install options and package pins, plus get-pip's own
``--no-setuptools`` / ``--no-wheel``) and does the same job with the interpreter's bundled
``ensurepip``, then lets pip (which reaches the package index as configured) install the pins.
"""

from __future__ import annotations

import subprocess
import sys

GET_PIP_ONLY = {"--no-setuptools", "--no-wheel"}


def main():
    subprocess.check_call([sys.executable, "-m", "ensurepip", "--upgrade", "--default-pip"])
    args = [a for a in sys.argv[1:] if a not in GET_PIP_ONLY]
    if any(not a.startswith("-") for a in args):
        subprocess.check_call([sys.executable, "-m", "pip", "install", "--upgrade"] + args)


if __name__ == "__main__":
    main()
