"""module_defaults for the action group ``ascend.cluster.ascend`` (meta/runtime.yml).

The simulated tools are NOT on PATH here: a module finds them only through the paths the group's
module_defaults hand it. The action plugins (training_rank, training_ranks, training_results, training_watch)
get the defaults too.
"""

from __future__ import annotations

import json
import sys
import textwrap

from tests.helpers.ansible_cli import run_playbook

PLAY_HEAD = """\
- hosts: localhost
  connection: local
  gather_facts: false
  environment:
    ASCEND_SIM_STATE: "{{ sim_state }}"
  module_defaults:
    group/ascend.cluster.ascend:
      hccn_tool: "{{ sim_bin }}/hccn_tool"
      npu_smi: "{{ sim_bin }}/npu-smi"
      hccn_conf: "{{ sim_conf }}"
      # An unset variable leaves the option out (its module default applies).
      %s: "{{ not_set_anywhere | default(omit) }}"
"""


def play(tasks: str, omitted: str = "timeout") -> str:
    return PLAY_HEAD % omitted + "  tasks:\n" + textwrap.indent(textwrap.dedent(tasks), "    ")


def run(tmp_path, server, text: str, **extra):
    playbook = tmp_path / "play.yml"
    playbook.write_text(text)
    extra_vars = {
        "sim_state": str(server.state_dir),
        "sim_bin": str(server.bin_dir),
        "sim_conf": str(server.hccn_conf),
        "tmp": str(tmp_path),
        "ansible_python_interpreter": sys.executable,
        **extra,
    }
    return run_playbook(playbook, "localhost,", extra_vars=extra_vars, env={"PATH": "/usr/bin:/bin"})


def test_group_defaults_reach_hccn_facts_and_hccn_config(sim_cluster, tmp_path):
    server = sim_cluster(servers=1).servers[0]
    result = run(
        tmp_path,
        server,
        play("""\
        - ascend.cluster.hccn_facts: {}
        - ascend.cluster.hccn_config:
            devices: [{device_id: 0, address: "{{ d0.device_ip }}", netmask: "{{ d0.netmask }}"}]
          vars:
            d0: "{{ ansible_facts.ascend_npu.devices[0] }}"
          check_mode: true
          register: config
        - ansible.builtin.copy:
            dest: "{{ tmp }}/out.json"
            content: "{{ {'facts': ansible_facts.ascend_npu, 'config': config} | to_json }}"
            mode: "0644"
        """),
    )
    assert result.rc == 0, result.output
    out = json.loads((tmp_path / "out.json").read_text())
    facts = out["facts"]
    assert facts["source"] == "hccn_tool" and facts["device_list_source"] == "npu-smi"
    assert facts["hccn_tool"] == f"{server.bin_dir}/hccn_tool"
    assert facts["npu_smi"] == f"{server.bin_dir}/npu-smi"
    assert facts["hccn_conf"] == str(server.hccn_conf)
    assert out["config"]["hccn_tool"] == f"{server.bin_dir}/hccn_tool"
    assert out["config"]["changed"] is False


def test_group_npu_smi_reaches_training_job_preflight(sim_cluster, tmp_path):
    server = sim_cluster(servers=1).servers[0]
    text = play("""\
        - ascend.cluster.training_job:
            state: preflight
            devices: [3]
            job_root: "{{ tmp }}/jobs"
            lock_dir: "{{ tmp }}/locks"
          register: pre
          failed_when: false
        - ansible.builtin.copy:
            dest: "{{ tmp }}/out.json"
            content: "{{ pre | to_json }}"
            mode: "0644"
        """)
    with server.hold(3) as proc:
        result = run(tmp_path, server, text)
    assert result.rc == 0, result.output
    pre = json.loads((tmp_path / "out.json").read_text())
    # Only the npu-smi the group names can list the process holding device 3.
    assert [b.get("pid") for b in pre["busy"] if b.get("device_id") == 3] == [proc.pid], pre


def test_action_plugins_take_group_and_module_defaults(sim_cluster, tmp_path):
    """training_rank and training_watch run on the controller first: both see the merged defaults."""
    server = sim_cluster(servers=1).servers[0]
    result = run(
        tmp_path,
        server,
        play(
            """\
        - name: A rank that is never gated gives up after gate_timeout, holding its lock meanwhile
          ascend.cluster.training_rank:
            job_id: j1
            run_dir: "{{ tmp }}/run"
            argv: ["true"]
            rank_id: 0
            device_id: 5
            rank_size: 1
            local_rank: 0
            local_count: 1
            rank_table_path: "{{ tmp }}/table.json"
            gate_timeout: 1
          register: rank
          failed_when: false
        - name: The watch reads the job under the job_root its module_defaults give
          ascend.cluster.training_watch:
            job_id: missing-job
            controller_dir: "{{ tmp }}/controller"
            coordinator: localhost
          register: watch
          failed_when: false
        - ansible.builtin.copy:
            dest: "{{ tmp }}/out.json"
            content: "{{ {'rank': rank, 'watch': watch} | to_json }}"
            mode: "0644"
        """,
            omitted="npu_smi",
        ).replace(
            "  tasks:\n",
            '    ascend.cluster.training_rank:\n      job_root: "{{ tmp }}/jobs"\n      lock_dir: "{{ tmp }}/locks"\n'
            '    ascend.cluster.training_watch:\n      job_root: "{{ tmp }}/watched"\n  tasks:\n',
            1,
        ),
    )
    assert result.rc == 0, result.output
    out = json.loads((tmp_path / "out.json").read_text())
    assert "Unsupported parameters" not in out["rank"].get("msg", ""), out["rank"]
    assert out["rank"]["rank"]["rank_id"] == 0, out["rank"]
    assert (tmp_path / "locks" / "device_5.lock").exists()
    assert (tmp_path / "run" / "device_0" / "env.log").exists()
    assert f"job missing-job is not recorded under {tmp_path}/watched on localhost" in out["watch"]["msg"], out["watch"]


def test_group_defaults_reach_the_watch_action(sim_cluster, tmp_path):
    """An option no module knows, set for the group, is refused by the action plugin: it sees the group's defaults."""
    server = sim_cluster(servers=1).servers[0]
    text = play("""\
        - ascend.cluster.training_watch:
            job_id: j
            controller_dir: "{{ tmp }}/controller"
        """).replace('      hccn_conf: "{{ sim_conf }}"\n', '      hccn_conf: "{{ sim_conf }}"\n      no_such_option: 1\n', 1)
    result = run(tmp_path, server, text)
    assert result.rc != 0 and "unknown options: no_such_option" in result.output, result.output


def test_group_and_module_defaults_reach_training_ranks_and_training_results(sim_cluster, tmp_path):
    """The launch's per-server supervisor and results collector take the group's tool paths too."""
    server = sim_cluster(servers=1).servers[0]
    result = run(
        tmp_path,
        server,
        play(
            """\
        - name: Ranks that are never gated give up after gate_timeout, holding their locks meanwhile
          ascend.cluster.training_ranks:
            job_id: j1
            run_dir: "{{ tmp }}/run"
            argv: ["true"]
            ranks: [{rank_id: 0, device_id: 6}, {rank_id: 1, device_id: 7}]
            local_count: 2
            rank_size: 2
            rank_table_path: "{{ tmp }}/table.json"
            gate_timeout: 1
          register: ranks
          failed_when: false
        - name: The results are looked up under the job_root its module_defaults give
          ascend.cluster.training_results:
            job_id: missing-job
          register: results
          failed_when: false
        - ansible.builtin.copy:
            dest: "{{ tmp }}/out.json"
            content: "{{ {'ranks': ranks, 'results': results} | to_json }}"
            mode: "0644"
        """,
            omitted="npu_smi",
        ).replace(
            "  tasks:\n",
            '    ascend.cluster.training_ranks:\n      job_root: "{{ tmp }}/jobs"\n      lock_dir: "{{ tmp }}/locks"\n'
            '    ascend.cluster.training_results:\n      job_root: "{{ tmp }}/collected"\n  tasks:\n',
            1,
        ),
    )
    assert result.rc == 0, result.output
    out = json.loads((tmp_path / "out.json").read_text())
    assert "Unsupported parameters" not in out["ranks"].get("msg", ""), out["ranks"]
    assert [r["rank_id"] for r in out["ranks"]["ranks"]] == [0, 1], out["ranks"]
    assert (tmp_path / "locks" / "device_6.lock").exists() and (tmp_path / "locks" / "device_7.lock").exists()
    assert (tmp_path / "run" / "device_1" / "env.log").exists()
    assert "Unsupported parameters" not in out["results"].get("msg", ""), out["results"]
    assert f"job missing-job is not recorded under {tmp_path}/collected" in out["results"]["msg"], out["results"]
