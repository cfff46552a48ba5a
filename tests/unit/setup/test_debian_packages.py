"""tests/setup/debian-packages.sh: `make test` installs only the missing Debian packages, or says how."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from tests.helpers.collection import REPO_ROOT

SCRIPT = REPO_ROOT / "tests" / "setup" / "debian-packages.sh"


def _fake_tools(tmp_path: Path, installed: set[str], apt_rc: int = 0) -> Path:
    """dpkg-query that knows ``installed``; apt-get that records its arguments."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "dpkg-query").write_text(
        "#!/bin/sh\n"
        'pkg=$(eval echo \\${$#})\n'
        f'case " {" ".join(sorted(installed))} " in *" $pkg "*) printf "install ok installed";; *) exit 1;; esac\n'
    )
    (bin_dir / "apt-get").write_text(f'#!/bin/sh\necho "$@" >> {tmp_path}/apt.log\necho "apt says $1"\nexit {apt_rc}\n')
    for tool in bin_dir.iterdir():
        tool.chmod(0o755)
    return bin_dir


def _run(bin_dir: Path | None, *packages: str, user: list[str] | None = None, script: Path = SCRIPT) -> subprocess.CompletedProcess[str]:
    path = f"{bin_dir}:{os.environ['PATH']}" if bin_dir else os.environ["PATH"]
    return subprocess.run(
        [*(user or []), "bash", str(script), *packages],
        capture_output=True,
        text=True,
        check=False,
        env=dict(os.environ, PATH=path),
    )


def test_nothing_missing_is_silent_and_installs_nothing(tmp_path):
    bin_dir = _fake_tools(tmp_path, {"ufw", "shellcheck"})
    proc = _run(bin_dir, "ufw", "shellcheck")
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "")
    assert not (tmp_path / "apt.log").exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="installing is what root does; the non-root path is tested below")
def test_root_installs_only_the_missing_ones(tmp_path):
    bin_dir = _fake_tools(tmp_path, {"ufw"})
    proc = _run(bin_dir, "ufw", "shellcheck", "openssh-server")
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "apt.log").read_text().splitlines() == [
        "update -q",
        "install -y -q --no-install-recommends shellcheck openssh-server",
    ]
    assert proc.stderr == "make test: installing shellcheck openssh-server\n"


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to fake a failing apt-get as root")
def test_a_failed_install_ends_with_the_command_to_run(tmp_path):
    bin_dir = _fake_tools(tmp_path, set(), apt_rc=100)
    proc = _run(bin_dir, "shellcheck")
    assert proc.returncode == 1
    last = proc.stderr.splitlines()[-1]
    assert last == (
        "make test: installing Debian packages failed (log above); "
        "run as root: apt-get update && apt-get install -y --no-install-recommends shellcheck"
    )
    assert "apt says update" in proc.stderr


def test_without_root_it_stops_with_one_line_naming_the_command():
    # pytest's tmp_path is private to root; the unprivileged user needs to reach the fake tools.
    with tempfile.TemporaryDirectory() as shared:
        Path(shared).chmod(0o755)
        _check_non_root(Path(shared))


def _check_non_root(tmp_path: Path) -> None:
    bin_dir = _fake_tools(tmp_path, {"ufw"})
    user: list[str] = []
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if not setpriv:
            pytest.fail("setpriv (util-linux) is needed to run the script as a non-root user")
        user = [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups"]
    # the unprivileged user runs a copy beside the fake tools: the checkout may sit where it cannot enter (a clone under
    # mktemp -d or /root, both mode 0700) - a test must not depend on where the user cloned
    script = tmp_path / SCRIPT.name
    shutil.copy(SCRIPT, script)
    script.chmod(0o755)
    proc = _run(bin_dir, "ufw", "shellcheck", user=user, script=script)
    assert proc.returncode == 1
    assert proc.stderr == "make test: missing Debian packages; run as root: apt-get install -y --no-install-recommends shellcheck\n"
    assert not (tmp_path / "apt.log").exists()
