"""The filters through Jinja, by their FQCN, in a real ansible-playbook run on localhost."""

from __future__ import annotations

import json
import sys

import yaml

from tests.helpers.ansible_cli import run_playbook
from tests.helpers.clusters import seed001_server, seed_table

# Run modules with this venv's Python, not whatever interpreter discovery finds on the machine.
LOCAL = {"ansible_python_interpreter": sys.executable}


def _play(tmp_path, tasks):
    playbook = tmp_path / "play.yml"
    playbook.write_text(
        yaml.safe_dump([{"hosts": "localhost", "connection": "local", "gather_facts": False, "tasks": tasks}], sort_keys=False)
    )
    return playbook


def test_rank_table_by_fqcn_writes_the_seed_table(tmp_path):
    out = tmp_path / "rank_table.json"
    servers = [seed001_server("10.155.111.141", 8), seed001_server("10.155.111.140", 6)]
    playbook = _play(
        tmp_path,
        [
            {
                "name": "Select 16 devices and write their rank table",
                "ansible.builtin.copy": {
                    "dest": str(out),
                    "content": "{{ servers | ascend.cluster.select_devices(np | int, chip='910A')"
                    " | ascend.cluster.rank_table(chip='910A') | to_nice_json }}",
                    "mode": "0644",
                },
            },
            {
                "name": "Read it back through the validator",
                "ansible.builtin.assert": {
                    "that": [
                        "(lookup('file', out) | ascend.cluster.validate_rank_table(chip='910A')).server_count == '2'",
                        "('[4,8)' | ascend.cluster.device_range) == [4, 5, 6, 7]",
                        "('10.0.0.1:4:0123' | ascend.cluster.npu_env)[0].devices | length == 4",
                    ]
                },
            },
        ],
    )
    result = run_playbook(playbook, "localhost,", extra_vars={**LOCAL, "servers": servers, "np": "16", "out": str(out)})
    assert result.rc == 0, result
    assert json.loads(out.read_text()) == seed_table("seed001_16p.json")


def test_refusal_reaches_the_operator(tmp_path):
    servers = [seed001_server("10.0.0.1", 6), seed001_server("10.0.0.2", 6)]  # same device IPs twice
    playbook = _play(tmp_path, [{"ansible.builtin.debug": {"msg": "{{ servers | ascend.cluster.rank_table }}"}}])
    result = run_playbook(playbook, "localhost,", extra_vars={**LOCAL, "servers": servers})
    assert result.rc != 0
    assert "rank_table: server 10.0.0.2 device 0: device_ip 192.1.27.6 is already used by server 10.0.0.1 device 0" in result.output
