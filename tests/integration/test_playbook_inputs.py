"""Wrong or partial input to any playbook: refused on the controller with one plain message, nothing changed, nothing started.

Each refusal is checked three ways: the message (the task's ``msg`` begins with it, not after
Ansible's wrapping), a snapshot of every file the playbooks write (rank tables on the servers and
the controller, hccn.conf, job records, locks, run and controller job directories) equal before
and after, and no job started (no run directory).
"""

from __future__ import annotations

import json
import re
import shutil

import pytest

from tests.helpers.ansible_cli import PlaybookResult, run_playbook
from tests.helpers.collection import REPO_ROOT
from tests.helpers.runs import snapshot

from .conftest import SIM_INVENTORY
from .test_launch_playbooks import launch_vars
from .test_smoke import summary_rows

PLAYBOOKS = REPO_ROOT / "playbooks"
OLD_TABLE = '{"note": "the table a running job reads"}\n'
DOUBLE_STOP = re.compile(r"(?<!\.)\.\.(?!\.)|\?\.")  # "x.." or "mean np?." (an ellipsis is fine)


def with_old_tables(cluster):
    """A rank table on every server and the controller copy, as an earlier job left them."""
    for where in [cluster.root / s.name / "etc" for s in cluster.servers] + [cluster.root]:
        where.mkdir(parents=True, exist_ok=True)
        (where / "rank_table.json").write_text(OLD_TABLE)


def refused_message(res: PlaybookResult, after: str = "") -> str:
    """The failing task's ``msg`` (the first after ``after``), which must be our message from its first character."""
    assert res.rc != 0, res
    found = re.search(r'^fatal: \[\S+\]: FAILED! => (\{.*\})$', res.stdout[res.stdout.index(after) :], re.M)
    assert found, res
    msg = json.loads(found.group(1))["msg"]
    assert not msg.startswith("Task failed"), res
    assert "The filter plugin" not in res.output and "ascend_np" not in msg, res
    return msg


def assert_refused_untouched(cluster, playbook, extra, message, inventory=SIM_INVENTORY, limit=None):
    before = snapshot(cluster)
    res = run_playbook(PLAYBOOKS / f"{playbook}.yml", inventory, extra_vars=extra, limit=limit)
    msg = refused_message(res)
    assert message in msg, res
    assert msg.endswith("Nothing was changed or started."), res
    assert not DOUBLE_STOP.search(msg), msg  # one sentence end, whatever the last problem ends with
    assert snapshot(cluster) == before
    assert not (cluster.root / "runs").exists() and not (cluster.root / "controller").exists()
    return res


@pytest.mark.parametrize(
    "playbook, extra, message",
    # Each kind of check once per playbook: every message, case by case (a choice, a boolean, a command
    # that cannot be split, each typo), is the unit tier's (tests/unit/plugins/plugin_utils/test_inputs.py);
    # these runs prove that the playbook refuses with it before it touches anything.
    [
        # A: train checks every input before any table is written
        ("train", {"np": 4, "train_command": None}, "train_command is required (or ascend_train_argv, ascend_train_command)"),
        ("train", {"np": 4, "train_command": "bash"}, "train_command: the training command is only 'bash'"),
        # blank: refused here, not by the launch's own call after the pre-flight (which left a job directory behind)
        ("train", {"np": 4, "train_command": "  "}, "train_command is required (or ascend_train_argv, ascend_train_command)"),
        ("train", {"np": 4, "wait": "later"}, "wait='later' is not true or false"),
        # C: a typo of an input is refused with what it is close to
        ("train", {"nps": 16}, "unknown extra var 'nps': did you mean np?"),
        ("smoke", {"np": 4, "framwork": "pytorch"}, "unknown extra var 'framwork': did you mean framework?"),
        ("rank_table", {"npu_evn": "127.0.1.1:8"}, "unknown extra var 'npu_evn': did you mean npu_env?"),
        ("status", {"jobid": "x"}, "unknown extra var 'jobid': did you mean job_id?"),
        ("stop", {"jobid": "all"}, "unknown extra var 'jobid': did you mean job_id?"),
        ("prepare", {"ascend_host": "ascend"}, "unknown extra var 'ascend_host': did you mean ascend_hosts?"),
        # D: np=abc names np, not the role's ascend_np
        ("rank_table", {"np": "abc"}, "np='abc' is not a whole number of at least 1: write for example -e np=16"),
        # the roles' own inputs, checked once for every server (ascend.cluster.role_inputs): train's two roles, and
        # playbook_inputs' own, which the playbooks import without Ansible's check on every host
        ("train", {"np": 4, "ascend_launch_poll_interval_s": "often"}, "launch_training: argument 'ascend_launch_poll_interval_s'"),
        ("stop", {"ascend_playbook_inputs": ["job_id"]}, "playbook_inputs: argument 'ascend_playbook_inputs' is of type"),
    ],
)
def test_wrong_input_is_refused_before_anything_is_touched(sim_cluster, playbook, extra, message):
    cluster = sim_cluster(preset_ips=playbook != "prepare")  # prepare would set the IPs of a fresh cluster
    with_old_tables(cluster)
    extra = launch_vars(cluster, **extra) if playbook == "train" else {**cluster.inventory_vars, **extra}
    assert_refused_untouched(cluster, playbook, {k: v for k, v in extra.items() if v is not None}, message)


@pytest.mark.parametrize(
    "extra, message",
    [
        ({}, "sim_dir is required: Directory of the simulated cluster"),
        ({"sim_dir": "{tmp}", "servers": "abc"}, "servers='abc' is not a whole number of at least 1"),
        ({"sim_dir": "{tmp}", "chip": "910X"}, "chip='910X' is not one of 910A, 910B, A3"),
        ({"sim_dir": "{tmp}", "chips": "A3"}, "unknown extra var 'chips': did you mean chip?"),
    ],
)
def test_sim_cluster_refuses_wrong_input_and_makes_nothing(tmp_path, extra, message):
    target = tmp_path / "sim"
    extra = {name: str(value).replace("{tmp}", str(target)) for name, value in extra.items()}
    res = run_playbook(PLAYBOOKS / "sim_cluster.yml", extra_vars=extra)
    msg = refused_message(res)
    assert message in msg and msg.endswith("Nothing was changed or started."), res
    assert not DOUBLE_STOP.search(msg), msg
    assert not target.exists()


# A: a launch refused for busy devices changes no table (the table is written after the pre-flight):
# tests/integration/test_launch_playbooks.py, test_wait_false_status_leftover_kill_stale_and_stop's second launch.


@pytest.fixture
def npu_inventory(tmp_path):
    """The simulated cluster's inventory with the servers in group ``npu`` instead of ``ascend``."""
    root = tmp_path / "inventory"
    (root / "group_vars").mkdir(parents=True)
    shutil.copy(SIM_INVENTORY.parent / "group_vars" / "ascend.yml", root / "group_vars" / "npu.yml")
    text = SIM_INVENTORY.read_text().replace("\nascend:\n", "\nnpu:\n")
    assert "\nnpu:\n" in text
    (root / "hosts.yml").write_text(text)
    return root / "hosts.yml"


@pytest.mark.parametrize("playbook", ["prepare", "rank_table", "smoke", "train", "status", "stop"])
def test_no_selected_host_fails_naming_the_pattern_and_the_override(sim_cluster, npu_inventory, playbook):
    """B: an inventory without group ascend selects nothing; that is an error, not a green run."""
    cluster = sim_cluster()
    with_old_tables(cluster)
    extra = launch_vars(cluster, np=4) if playbook == "train" else {**cluster.inventory_vars}
    assert_refused_untouched(
        cluster, playbook, extra, "no host selected: the pattern 'ascend' (-e ascend_hosts=...) matches no host", inventory=npu_inventory
    )


def test_the_override_and_limit_select_the_hosts(sim_cluster, npu_inventory):
    """B: -e ascend_hosts names the group; --limit narrows it and still runs, or selects nothing and is refused."""
    cluster = sim_cluster()
    rank_table = PLAYBOOKS / "rank_table.yml"
    extra = {**cluster.inventory_vars, "ascend_hosts": "npu", "np": 8}
    res = run_playbook(rank_table, npu_inventory, extra_vars=extra, limit="server1")
    assert res.rc == 0, res
    assert (cluster.root / "server1" / "etc" / "rank_table.json").exists()
    assert not (cluster.root / "server0" / "etc" / "rank_table.json").exists()
    assert_refused_untouched(
        cluster, "rank_table", {**extra, "ascend_hosts": "server0"}, "the pattern 'server0'", inventory=npu_inventory, limit="server1"
    )


def test_a_server_that_cannot_be_read_refuses_the_launch_unless_allow_partial(sim_cluster):
    """F: the job is not silently laid out on the servers left; -e allow_partial=true shrinks it, saying so.

    The simulator's servers are local connections, so here server1's hccn_tool is missing (its facts
    fail); tests/testbed/test_launch_bed.py stops a server's sshd for the unreachable case.
    """
    cluster = sim_cluster()
    with_old_tables(cluster)
    cluster["server1"].fault("driver-missing")
    before = snapshot(cluster)
    res = run_playbook(PLAYBOOKS / "train.yml", SIM_INVENTORY, extra_vars=launch_vars(cluster, np=8))
    msg = refused_message(res, after="TASK [Refuse to run without a server")
    assert msg.startswith("server(s) server1 could not be reached or read"), res
    assert "-e allow_partial=true" in msg and msg.endswith("Nothing was changed or started.")
    assert snapshot(cluster) == before and not (cluster.root / "runs").exists()

    shrunk = run_playbook(
        PLAYBOOKS / "train.yml", SIM_INVENTORY, extra_vars=launch_vars(cluster, np=8, allow_partial=True, ascend_train_env={"STEPS": "1"})
    )
    assert shrunk.rc == 0, shrunk
    assert "allow_partial=true: training without server1" in shrunk.stdout, shrunk
    job = next((cluster.root / "runs").iterdir())
    assert json.loads((job / "rank_table.json").read_text())["server_count"] == "1"  # the job's own table
    assert len(list((cluster.root / "runs").glob("*/device_*"))) == 8
    # the launch writes no shared table: both servers keep theirs
    assert [(cluster.root / s / "etc" / "rank_table.json").read_text() for s in ("server0", "server1")] == [OLD_TABLE] * 2


@pytest.mark.parametrize("playbook", ["rank_table", "smoke", "train"])
def test_an_unreachable_server_is_refused_naming_it(sim_cluster, unreachable_inventory, playbook):
    """Issue 13 item 1: rank_table and smoke refuse like train (the same task file), nothing changed or started."""
    cluster = sim_cluster()
    with_old_tables(cluster)
    before = snapshot(cluster)
    extra = launch_vars(cluster, np=8) if playbook in ("train", "smoke") else {**cluster.inventory_vars, "np": 8}
    res = run_playbook(PLAYBOOKS / f"{playbook}.yml", unreachable_inventory, extra_vars=extra)
    assert "UNREACHABLE!" in res.stdout, res
    msg = refused_message(res, after="TASK [Refuse to run without a server")
    assert msg.startswith("server(s) server1 could not be reached or read"), res
    assert "-e allow_partial=true" in msg and msg.endswith("Nothing was changed or started."), res
    assert snapshot(cluster) == before
    assert not (cluster.root / "runs").exists() and not (cluster.root / "controller").exists()


def test_allow_partial_writes_the_rank_table_for_the_servers_that_answered(sim_cluster, unreachable_inventory):
    cluster = sim_cluster()
    with_old_tables(cluster)
    res = run_playbook(
        PLAYBOOKS / "rank_table.yml", unreachable_inventory, extra_vars={**cluster.inventory_vars, "np": 8, "allow_partial": True}
    )
    assert res.rc == 0, res
    assert "allow_partial=true: writing the rank table without server1" in res.stdout, res
    table = json.loads((cluster.root / "server0" / "etc" / "rank_table.json").read_text())
    assert table["server_count"] == "1" and len(table["server_list"][0]["device"]) == 8
    assert (cluster.root / "server1" / "etc" / "rank_table.json").read_text() == OLD_TABLE


def test_allow_partial_smoke_checks_the_others_and_names_the_lost_server(sim_cluster, unreachable_inventory):
    cluster = sim_cluster()
    res = run_playbook(PLAYBOOKS / "smoke.yml", unreachable_inventory, extra_vars=launch_vars(cluster, np=8, allow_partial=True))
    assert res.rc != 0, res  # a server that cannot be reached stays a finding of the smoke check
    assert "allow_partial=true: smoke-checking without server1" in res.stdout, res
    rows = [(r["stage"], r["server"], r["result"], r["detail"]) for r in summary_rows(res, cluster)]
    assert rows[0] == ("facts", "server1", "FAIL", "unreachable or failed before the smoke check"), rows
    assert [(row[0], row[2]) for row in rows][1:3] == [("health", "OK"), ("rank_table", "OK")], rows  # the others still checked
    assert [row[1:3] for row in rows if row[0] == "rank"] == [("server0", "OK")] * 8, rows
