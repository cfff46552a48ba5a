"""The suite does not depend on where it was cloned (issue 27 item 1).

A clone under ``mktemp -d`` (mode 0700, as /root is), in a directory whose name has a space, with a read-only
``shared/`` beside it, runs the parts of the suite that touch paths: the collection link, the Debian set-up script run
as another user, and a playbook on a simulated cluster whose wrappers and state live under that path.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.helpers.collection import REPO_ROOT

CHECKS = [
    "tests/unit/setup/test_debian_packages.py",
    "tests/integration/test_hccn_facts.py::test_configured_server",
    "tests/integration/test_hccn_facts.py::test_playbook_sets_facts",
]


def test_a_clone_in_a_private_directory_with_a_space_and_a_read_only_shared_beside_it_passes(tmp_path):
    private = Path(tempfile.mkdtemp(dir=tmp_path))  # what `mktemp -d` makes: mode 0700
    assert stat.S_IMODE(private.stat().st_mode) == 0o700
    parent = private / "with space"
    parent.mkdir()
    shared = parent / "shared"
    shared.mkdir()
    (shared / "ascend-reference.md").write_text("read-only\n")
    checkout = parent / "p"
    subprocess.run(["git", "clone", "--quiet", "--no-hardlinks", str(REPO_ROOT), str(checkout)], check=True, timeout=120)
    for path in (shared / "ascend-reference.md", shared):
        path.chmod(0o444 if path.is_file() else 0o555)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "ASCEND_", "ANSIBLE_"))}
    try:
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *CHECKS],
            cwd=checkout,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
    finally:
        shared.chmod(0o755)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert f"{len(CHECKS) - 1 + 4} passed" in done.stdout, done.stdout[-2000:]
    assert (checkout / "build" / "collections" / "ansible_collections" / "ascend" / "cluster").resolve() == checkout.resolve()
    assert sorted(p.name for p in shared.iterdir()) == ["ascend-reference.md"]  # nothing written beside the checkout
