"""The collection as a Galaxy user gets it: the built tarball holds what they need (and nothing of
the checkout's tooling), installs with ansible-galaxy, and the README's commands for the simulated
cluster pass as written from a directory outside the checkout, with only the installed copy on
ANSIBLE_COLLECTIONS_PATH."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import tarfile

from tests.helpers.ansible_cli import BIN_DIR, ansible_env, run_playbook
from tests.helpers.collection import REPO_ROOT

WANTED = [
    "README.md",
    "COPYING",
    "requirements.txt",
    "meta/runtime.yml",
    "meta/execution-environment.yml",
    "plugins/filter/rank_table.py",
    "plugins/filter/rank_table.yml",
    "plugins/modules/hccn_facts.py",
    "roles/rank_table/tasks/main.yml",
    "playbooks/smoke.yml",
    "playbooks/sim_cluster.yml",
    "playbooks/templates/sim_inventory.yml.j2",
    "docs/simulator.md",
    "simulator/bin/ascend-sim",
    "simulator/ascend_sim/admin.py",
    "examples/sim/group_vars/ascend.yml",
    "examples/sim/ip_plan.yml",
    "examples/train/sim.yml",
    "examples/train/train_1p.sh",
    "examples/ee/execution-environment.yml",
]
# The checkout's tooling: make, tests (test bed and stand-ins included), benchmarks, build state.
UNWANTED = re.compile(
    r"^(tests|bench|build|\.venv[^/]*|\.git|\.ci)(/|$)|^(Makefile|pytest\.ini|ruff\.toml|mypy\.ini)$|__pycache__|demo\.sh$"
)


def readme_commands(*playbooks: str) -> list[list[str]]:
    """The README's commands (its section for the installed collection) that run these playbooks."""
    section = REPO_ROOT.joinpath("README.md").read_text().split("## Installed from the collection tarball", 1)[1]
    block = section.split("```bash\n", 1)[1].split("```", 1)[0]
    found = {}
    for line in block.splitlines():
        argv = shlex.split(line, comments=True)
        if argv[:1] == ["ansible-playbook"] and argv[1] in playbooks:
            found[argv[1]] = argv[1:]
    assert sorted(found) == sorted(playbooks), f"the README's install section lost a command: {found}"
    return [found[name] for name in playbooks]


def test_the_tarball_installs_and_the_readme_commands_pass_outside_the_checkout(tmp_path):
    built = subprocess.run(
        [str(BIN_DIR / "ansible-galaxy"), "collection", "build", "--force", "--output-path", str(tmp_path / "dist")],
        cwd=REPO_ROOT,
        env=ansible_env(),
        capture_output=True,
        text=True,
        check=False,
    )
    assert built.returncode == 0, built.stdout + built.stderr
    (tarball,) = (tmp_path / "dist").glob("ascend-cluster-*.tar.gz")
    with tarfile.open(tarball) as tar:
        members = {m.name for m in tar.getmembers()}
        manifest = json.load(tar.extractfile("MANIFEST.json"))  # type: ignore[arg-type]
    assert [name for name in WANTED if name not in members] == []
    assert sorted(name for name in members if UNWANTED.search(name)) == []
    info = manifest["collection_info"]
    assert not any(info.get(key) for key in ("repository", "documentation", "issues", "homepage")), info  # no placeholder URLs

    installed = tmp_path / "collections"
    env = {"ANSIBLE_COLLECTIONS_PATH": str(installed)}  # only the installed copy, not the checkout's link
    install = subprocess.run(
        [str(BIN_DIR / "ansible-galaxy"), "collection", "install", "-p", str(installed), str(tarball)],
        cwd=tmp_path,
        env=ansible_env(env),
        capture_output=True,
        text=True,
        check=False,
    )
    assert install.returncode == 0 and "installed successfully" in install.stdout, install.stdout + install.stderr
    collection = installed / "ansible_collections" / "ascend" / "cluster"
    before = {p for p in collection.rglob("*") if "__pycache__" not in p.parts}

    work = tmp_path / "work"  # the user's directory: neither the checkout nor the collection
    work.mkdir()
    setup, smoke = readme_commands("ascend.cluster.sim_cluster", "ascend.cluster.smoke")
    made = run_playbook(setup[0], args=setup[1:], cwd=work, env=env)
    assert made.rc == 0, made
    sim = work / "ascend-sim"
    inventory = (sim / "inventory.yml").read_text()
    assert f'ascend_sim_root: "{sim}"' in inventory and ".." not in inventory, inventory

    checked = run_playbook(smoke[0], args=smoke[1:], cwd=work, env=env)
    assert checked.rc == 0, checked
    assert re.search(r"launch +- +- +- +OK +job smoke-", checked.stdout), checked
    assert ": 16/16 ranks OK, health OK, rank table OK" in checked.stdout, checked  # the smoke summary line
    # every job file in the simulated cluster's directory; nothing written into the collection
    assert sorted(p.name for p in (sim / "server1" / "locks").iterdir()), "device locks not under the sim directory"
    assert (sim / "runs").is_dir() and (sim / "controller").is_dir() and (sim / "server0" / "jobs").is_dir()
    assert {p for p in collection.rglob("*") if "__pycache__" not in p.parts} == before
