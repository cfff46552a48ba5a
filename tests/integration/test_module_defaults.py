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
# A rank's job records and device locks, as module_defaults of the module that runs it.
JOB_DIRS = {"job_root": "{{ tmp }}/jobs", "lock_dir": "{{ tmp }}/locks"}


def play(tasks: str, omitted: str = "timeout", modules: dict[str, dict[str, str]] | None = None) -> str:
    """The play: PLAY_HEAD leaving ``omitted`` out, ``modules`` (``{module: {option: value}}``) as module_defaults of
    single modules of the collection beside the group's, then ``tasks``."""
    own = "".join(
        f"    ascend.cluster.{module}:\n" + "".join(f"      {option}: {json.dumps(value)}\n" for option, value in options.items())
        for module, options in (modules or {}).items()
    )
    return PLAY_HEAD % omitted + own + "  tasks:\n" + textwrap.indent(textwrap.dedent(tasks), "    ")


def with_out(tasks: str, **values: str) -> str:
    """``tasks``, then a task that writes ``values`` (name: the expression giving it) to {{ tmp }}/out.json."""
    content = ", ".join(f"'{name}': {expression}" for name, expression in values.items())
    return textwrap.dedent(tasks) + textwrap.dedent(f"""\
        - ansible.builtin.copy:
            dest: "{{{{ tmp }}}}/out.json"
            content: "{{{{ {{{content}}} | to_json }}}}"
            mode: "0644"
        """)


def out_of(tmp_path, result) -> dict:
    """What the play's last task wrote (``with_out``), once the play has passed."""
    assert result.rc == 0, result.output
    return json.loads((tmp_path / "out.json").read_text())


def outcome(tmp_path, server, tasks: str, *registered: str, values: dict[str, str] | None = None, **play_args) -> dict:
    """Run the play of ``tasks`` (``play_args``: ``play``'s) on ``server``; it must pass, and no ``registered`` task may
    have refused the options the defaults gave it. What its ``registered`` variables, and ``values`` (name:
    expression), hold after it."""
    text = play(with_out(tasks, **{name: name for name in registered}, **(values or {})), **play_args)
    out = out_of(tmp_path, run(tmp_path, server, text))
    for name in registered:
        assert "Unsupported parameters" not in out[name].get("msg", ""), out[name]
    return out


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
    out = outcome(
        tmp_path,
        server,
        """\
        - ascend.cluster.hccn_facts: {}
        - ascend.cluster.hccn_config:
            devices: [{device_id: 0, address: "{{ d0.device_ip }}", netmask: "{{ d0.netmask }}"}]
          vars:
            d0: "{{ ansible_facts.ascend_npu.devices[0] }}"
          check_mode: true
          register: config
        """,
        "config",
        values={"facts": "ansible_facts.ascend_npu"},
    )
    facts = out["facts"]
    assert facts["source"] == "hccn_tool" and facts["device_list_source"] == "npu-smi"
    assert facts["hccn_tool"] == f"{server.bin_dir}/hccn_tool"
    assert facts["npu_smi"] == f"{server.bin_dir}/npu-smi"
    assert facts["hccn_conf"] == str(server.hccn_conf)
    assert out["config"]["hccn_tool"] == f"{server.bin_dir}/hccn_tool"
    assert out["config"]["changed"] is False


def test_group_npu_smi_reaches_training_job_preflight(sim_cluster, tmp_path):
    server = sim_cluster(servers=1).servers[0]
    tasks = """\
        - ascend.cluster.training_job:
            state: preflight
            devices: [3]
            job_root: "{{ tmp }}/jobs"
            lock_dir: "{{ tmp }}/locks"
          register: pre
          failed_when: false
        """
    with server.hold(3) as proc:
        pre = outcome(tmp_path, server, tasks, "pre")["pre"]
    # Only the npu-smi the group names can list the process holding device 3.
    assert [b.get("pid") for b in pre["busy"] if b.get("device_id") == 3] == [proc.pid], pre


def test_action_plugins_take_group_and_module_defaults(sim_cluster, tmp_path):
    """training_rank and training_watch run on the controller first: both see the merged defaults."""
    server = sim_cluster(servers=1).servers[0]
    out = outcome(
        tmp_path,
        server,
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
        """,
        "rank",
        "watch",
        omitted="npu_smi",
        modules={"training_rank": JOB_DIRS, "training_watch": {"job_root": "{{ tmp }}/watched"}},
    )
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
    out = outcome(
        tmp_path,
        server,
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
        """,
        "ranks",
        "results",
        omitted="npu_smi",
        modules={"training_ranks": JOB_DIRS, "training_results": {"job_root": "{{ tmp }}/collected"}},
    )
    assert [r["rank_id"] for r in out["ranks"]["ranks"]] == [0, 1], out["ranks"]
    assert (tmp_path / "locks" / "device_6.lock").exists() and (tmp_path / "locks" / "device_7.lock").exists()
    assert (tmp_path / "run" / "device_1" / "env.log").exists()
    assert f"job missing-job is not recorded under {tmp_path}/collected" in out["results"]["msg"], out["results"]
