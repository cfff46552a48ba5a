"""ascend.cluster.smoke: the playbook on the simulated 2 x 8 cluster (the summary logic: tests/unit/plugins/plugin_utils/test_smoke.py).

Playbook runs use examples/sim/inventory.yml pointed at a fresh simulated cluster, with the
per-server job records and device locks of examples/train/sim.yml (launch_vars, as the launch tests).
"""

from __future__ import annotations

import json

import pytest

from ansible_collections.ascend.cluster.plugins.plugin_utils._net import smoke as _smoke
from tests.helpers.ansible_cli import run_playbook
from tests.helpers.collection import REPO_ROOT
from tests.helpers.runs import read_env_log

from .conftest import SIM_INVENTORY
from .test_launch_playbooks import launch_vars, rank_states

SMOKE = REPO_ROOT / "playbooks" / "smoke.yml"
CHECK_SCRIPT = REPO_ROOT / "roles" / "smoke_check" / "files" / "ascend_rank_check.py"


# ---- the playbook on the simulated cluster ------------------------------------------------


def summary_document(cluster):
    """The last run's <controller_dir>/<job_id>/summary.json, or <controller_dir>/smoke.json when it ran no job (docs/summaries.md)."""
    controller = cluster.root / "controller"
    path = max([*controller.glob("*/summary.json"), *controller.glob("smoke.json")], key=lambda p: p.stat().st_mtime)
    assert path.stat().st_mode & 0o777 == 0o644
    return json.loads(path.read_text())


def job_dirs(cluster):
    """The job directories on the controller (<controller_dir>/<job_id>/)."""
    return sorted(p.name for p in (cluster.root / "controller").iterdir() if p.is_dir())


def summary_rows(res, cluster):
    """Every row of the summary, from summary.json, cells as the printed table shows them (None: ``-``)."""
    document = summary_document(cluster)
    assert document["line"] in res.stdout, res  # printed last (on failure as the failing task's message)
    assert document["table"][0] in res.stdout, res
    return [{k: "-" if row.get(k) is None else str(row[k]) for k in _smoke.COLUMNS} for row in document["rows"]]


@pytest.mark.parametrize(
    "framework, np, checks, env",
    [
        ("mindspore", 16, 7, {"ANSIBLE_STDOUT_CALLBACK": "ascend.cluster.compact"}),
        ("pytorch", 16, 10, {"ANSIBLE_DISPLAY_OK_HOSTS": "false", "ANSIBLE_DISPLAY_SKIPPED_HOSTS": "false"}),
        ("mindspore_legacy", 8, 7, {}),
    ],
    ids=["mindspore compact", "pytorch changes only", "mindspore_legacy"],
)
def test_healthy_cluster_all_ranks_ok(sim_cluster, framework, np, checks, env):
    cluster = sim_cluster()
    res = run_playbook(SMOKE, SIM_INVENTORY, extra_vars=launch_vars(cluster, np=np, framework=framework), env=env)
    assert res.rc == 0, res
    if env:  # the compact callback, or the default one with ok and skipped results hidden: still every summary
        assert "ok: [" not in res.stdout and "skipping: [" not in res.stdout, res
    rows = summary_rows(res, cluster)
    ranks = [r for r in rows if r["stage"] == "rank"]
    assert [int(r["rank"]) for r in ranks] == list(range(np))
    # np=8 is spread 4 + 4 as train.yml spreads it
    assert [r["server"] for r in ranks] == ["server0"] * (np // 2) + ["server1"] * (np // 2)
    assert {(r["result"], r["detail"]) for r in ranks} == {("OK", f"{checks} checks passed")}, rows
    assert [(r["stage"], r["result"]) for r in rows if r["stage"] != "rank"] == [("health", "OK"), ("rank_table", "OK"), ("launch", "OK")]
    # the check ran in place of training, from the per-job copy, on every rank
    states = rank_states(cluster)
    assert sorted(states) == list(range(np)) and all(s["rc"] == 0 for s in states.values())
    job = next((cluster.root / "runs").iterdir())
    assert (job / "ascend_rank_check.py").read_bytes() == CHECK_SCRIPT.read_bytes()
    assert (job / "ascend_rank_check.py").stat().st_mode & 0o777 == 0o644
    assert f"{_smoke.VERDICT} " in (job / f"device_{np - 1}" / "train.log").read_text()
    if framework == "pytorch":  # torchrun's worker environment, per device: server1 is the job's second server of two
        env_log = read_env_log(job / f"device_{np - 1}" / "env.log")
        assert {k: env_log[k] for k in ("GROUP_RANK", "GROUP_WORLD_SIZE", "LOCAL_WORLD_SIZE", "ROLE_RANK", "ROLE_WORLD_SIZE")} == {
            "GROUP_RANK": "1",
            "GROUP_WORLD_SIZE": "2",
            "LOCAL_WORLD_SIZE": str(np // 2),
            "ROLE_RANK": str(np - 1),
            "ROLE_WORLD_SIZE": str(np),
        }
        assert env_log["TORCHELASTIC_RUN_ID"] == job.name and env_log["TORCHELASTIC_MAX_RESTARTS"] == "0"
        assert env_log["TORCHELASTIC_ERROR_FILE"] == str(job / f"device_{np - 1}" / "error.json")
    # summary.json has every row; the printed table the first four OK ones, then one line for the rest
    document = summary_document(cluster)
    assert (document["ok"], document["job_id"], document["check_mode"]) == (True, job.name, False)
    assert job_dirs(cluster) == [job.name] and not (cluster.root / "controller" / "smoke.json").exists()
    assert document["line"] == f"smoke {job.name}: {np}/{np} ranks OK, health OK, rank table OK"
    assert document["table"][-1].startswith(f"... {np + 3 - 4} more row(s) with RESULT OK")
    assert document["table"][-1] in res.stdout


def test_a_faulted_device_is_named_and_fails_the_run(sim_cluster):
    cluster = sim_cluster()
    cluster["server1"].fault("link", "--device", "3", "--down")
    before = [server.show()["devices"] for server in cluster.servers]
    res = run_playbook(SMOKE, SIM_INVENTORY, extra_vars=launch_vars(cluster, np=16))
    assert res.rc != 0, res
    rows = summary_rows(res, cluster)
    assert [r for r in rows if r["result"] == "FAIL"] == [
        {
            "stage": "health",
            "server": "server1",
            "device": "3",
            "rank": "11",
            "result": "FAIL",
            "detail": "link DOWN - check the optics/cable of NPU 3 (eth3) and its switch port",
        }
    ], rows
    # read-only: no device setting changed; the ranks still ran and reported
    assert [server.show()["devices"] for server in cluster.servers] == before
    assert len([r for r in rows if r["stage"] == "rank" and r["result"] == "OK"]) == 16
    assert ": 1 finding(s): health server1 device 3 rank 11: link DOWN" in res.stdout
    document = summary_document(cluster)
    assert document["ok"] is False and document["kind"] == "smoke" and document["line"].startswith("FAILED: smoke smoke-")
    assert [f.split(" - ")[0] for f in document["failures"]] == ["health server1 device 3 rank 11: link DOWN"]
    assert document["table"][1].split()[:2] == ["health", "server1"]  # the finding first


def test_a_wrong_rank_environment_names_every_failing_rank_and_check(sim_cluster):
    cluster = sim_cluster()
    # server1's ranks all get ASCEND_DEVICE_ID=7: only rank 15 (device 7) is right
    extra_env = (
        "{{ {'ASCEND_SIM_STATE': ascend_sim_server ~ '/state'}"
        " | combine({'ASCEND_DEVICE_ID': '7'} if inventory_hostname == 'server1' else {}) }}"
    )
    res = run_playbook(
        SMOKE, SIM_INVENTORY, extra_vars=launch_vars(cluster, np=16, framework="tensorflow", ascend_launch_extra_env=extra_env)
    )
    assert res.rc != 0, res
    rows = summary_rows(res, cluster)
    failed = {int(r["rank"]): r["detail"] for r in rows if r["result"] == "FAIL"}
    assert sorted(failed) == list(range(8, 15)), res
    assert failed[8] == "device_id: table device 0, DEVICE_ID=0, ASCEND_DEVICE_ID=7"
    assert [(r["stage"], r["result"]) for r in rows if r["stage"] == "launch"] == [("launch", "OK")], rows
    # launched with fail-fast off (no --report-only): each failed check exited 1 and stopped nobody
    states = rank_states(cluster)
    assert {r: s["rc"] for r, s in states.items()} == {r: 1 if 8 <= r <= 14 else 0 for r in range(16)}, states
    assert all(s["stopped_by"] is None for s in states.values()), states
    assert "rank server1 device 2 rank 10: device_id: table device 2, DEVICE_ID=2, ASCEND_DEVICE_ID=7" in res.stdout


def test_an_impossible_np_fails_clearly_before_anything_starts(sim_cluster):
    cluster = sim_cluster()
    res = run_playbook(SMOKE, SIM_INVENTORY, extra_vars=launch_vars(cluster, np=17))
    assert res.rc != 0, res
    rows = summary_rows(res, cluster)
    assert [(r["stage"], r["result"]) for r in rows] == [("health", "OK"), ("rank_table", "FAIL")]
    assert rows[1]["detail"].startswith("np=17 is not possible with the available 910B devices")  # the message alone, no filter name
    assert "possible np values are 1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 14, 16" in rows[1]["detail"]
    assert not (cluster.root / "runs").exists()
    assert job_dirs(cluster) == []  # no job ran: its summary is <controller_dir>/smoke.json, no job directory


# A server that cannot be read: refused naming it, nothing written or started, by the task file train and
# rank_table share (tests/integration/test_playbook_inputs.py: test_an_unreachable_server_is_refused_naming_it[smoke]),
# and with allow_partial=true named in the summary while the others are checked
# (test_allow_partial_smoke_checks_the_others_and_names_the_lost_server there).
def test_check_mode_works_out_facts_health_and_the_table_and_launches_nothing(sim_cluster):
    cluster = sim_cluster()
    # --check: facts, health and the table are worked out, nothing is launched or written
    checked = run_playbook(SMOKE, SIM_INVENTORY, extra_vars=launch_vars(cluster, np=16), check=True)
    assert checked.rc == 0, checked
    assert [(r["stage"], r["result"]) for r in summary_rows(checked, cluster)] == [("health", "OK"), ("rank_table", "OK")]
    assert not (cluster.root / "runs").exists()
    assert not (cluster.root / "server0" / "etc" / "rank_table.json").exists()
    assert job_dirs(cluster) == []


def test_a_held_device_fails_the_launch_row_with_the_holder(sim_cluster):
    cluster = sim_cluster()
    with cluster["server1"].hold(3) as squatter:
        res = run_playbook(SMOKE, SIM_INVENTORY, extra_vars=launch_vars(cluster, np=16))
    assert res.rc != 0, res
    rows = summary_rows(res, cluster)
    assert [(r["stage"], r["server"], r["result"]) for r in rows] == [
        ("health", "-", "OK"),
        ("rank_table", "-", "OK"),
        ("launch", "server1", "FAIL"),
    ], rows
    assert rows[2]["detail"].startswith(f"devices in use, nothing was started: device 3: process {squatter.pid} (sleep) holds NPU 3")
    assert job_dirs(cluster) == []  # refused by the pre-flight: no job directory on the controller
