"""The modules on the oldest target Python the running ansible-core supports, on the simulated cluster.

README "Supported versions" claims target hosts with Python 3.8+ under ansible-core 2.19 and 3.9+
under 2.20/2.21. This runs ``hccn_facts`` and ``training_job`` (pre-flight: job records, locks,
npu-smi) on both simulated servers with that interpreter as ``ansible_python_interpreter``, so a
module_utils file that does not run there fails here.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import textwrap

import pytest
from ansible.module_utils import basic
from ansible.release import __version__ as ansible_version

from tests.helpers.ansible_cli import run_playbook
from tests.integration.conftest import SIM_INVENTORY

# ansible-core (major, minor) -> the oldest target Python we claim for it (README "Supported versions").
OLDEST_TARGET = {(2, 19): (3, 8), (2, 20): (3, 9), (2, 21): (3, 9)}
_MAJOR, _MINOR = ansible_version.split(".")[:2]
CORE = (int(_MAJOR), int(_MINOR))


def _interpreter(version: tuple[int, int]) -> str | None:
    """An interpreter of exactly ``version``: $ASCEND_TEST_PYTHON<major><minor>, pyenv's, or PATH's."""
    name = "python%d.%d" % version
    root = os.environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv")
    candidates = [os.environ.get("ASCEND_TEST_PYTHON%d%d" % version, "")]
    candidates += sorted(glob.glob(os.path.join(root, "versions", "%d.%d.*" % version, "bin", name)), reverse=True)
    candidates.append(shutil.which(name) or "")
    probe = "import sys; print('%d.%d' % sys.version_info[:2])"
    for path in filter(None, candidates):
        try:
            out = subprocess.run([path, "-c", probe], capture_output=True, text=True, timeout=30, check=False).stdout
        except OSError:
            continue
        if out.strip() == "%d.%d" % version:  # a pyenv shim of an inactive version fails this
            return path
    return None


def test_the_claimed_oldest_target_is_ansible_cores_own():
    assert CORE in OLDEST_TARGET, f"ansible-core {ansible_version} is outside the range README claims"
    assert OLDEST_TARGET[CORE] == tuple(basic._PY_MIN)


PLAY = textwrap.dedent(
    """\
    - name: The collection's modules on the oldest supported target Python
      hosts: ascend
      gather_facts: false
      tasks:
        - name: Which Python runs the modules
          ansible.builtin.setup:
            gather_subset: ["!all", "!min", "python"]
        - name: Read the NPUs
          ascend.cluster.hccn_facts:
            hccn_tool: "{{ ascend_hccn_tool }}"
            npu_smi: "{{ ascend_npu_smi }}"
            hccn_conf: "{{ ascend_hccn_conf }}"
        - name: Pre-flight a job on every device
          ascend.cluster.training_job:
            state: preflight
            devices: "{{ ansible_facts.ascend_npu.devices | map(attribute='device_id') | list }}"
            npu_smi: "{{ ascend_npu_smi }}"
            job_root: "{{ out_dir }}/{{ inventory_hostname }}/jobs"
            lock_dir: "{{ out_dir }}/{{ inventory_hostname }}/locks"
          register: _preflight
        - name: Keep what the modules said
          ansible.builtin.copy:
            dest: "{{ out_dir }}/{{ inventory_hostname }}.json"
            content: >-
              {{ {'python': ansible_facts.python.version, 'npu': ansible_facts.ascend_npu,
                  'busy': _preflight.busy} | to_json }}
            mode: "0644"
          delegate_to: localhost
    """
)


def test_modules_run_on_the_oldest_target_python(sim_cluster, tmp_path):
    wanted = OLDEST_TARGET.get(CORE)
    if wanted is None:
        pytest.fail(f"ansible-core {ansible_version}: no oldest target Python claimed for it")
    python = _interpreter(wanted)
    if python is None:
        pytest.skip("no Python %d.%d interpreter on this machine (pyenv or PATH; or set ASCEND_TEST_PYTHON%d%d)" % (wanted * 2))
    cluster = sim_cluster()
    playbook = tmp_path / "oldest.yml"
    playbook.write_text(PLAY)
    extra = dict(cluster.inventory_vars, out_dir=str(tmp_path), ansible_python_interpreter=python)
    result = run_playbook(playbook, SIM_INVENTORY, extra_vars=extra)
    assert result.rc == 0, result
    for host in ("server0", "server1"):
        seen = json.loads((tmp_path / f"{host}.json").read_text())
        assert (seen["python"]["major"], seen["python"]["minor"]) == wanted
        assert seen["npu"]["device_count"] == 8 and all(d["device_ip"] for d in seen["npu"]["devices"])
        assert seen["busy"] == []
