"""The whole chain - prepare, smoke, train, diagnose - on a simulated cluster of real variants (issue 33 item 5).

Two A2 servers as published outputs show them (tests/corpus): server0 prints ``910B3`` from driver 23.0.7 - whose
version files the corpus holds, so its driver, firmware and CANN are checked to fit - and ``hccn_tool -tls -g`` without
the ``tls preconfigured`` field; server1 prints ``910B2C`` from driver 26.0.rc1 in the 114-column table with the
``Process id in container`` column. Different drivers are refused unless allowed, so the launches allow them. A
separate, cheaper run reads a first-generation server that prints the bare ``910B``.
"""

from __future__ import annotations

import json

from tests.helpers.ansible_cli import run_module, run_playbook
from tests.helpers.collection import REPO_ROOT
from tests.helpers.junit import read_report

from .conftest import SIM_INVENTORY
from .test_launch_playbooks import TRAIN, launch_vars, rank_states
from .test_prepare import PLAN, PREPARE
from .test_smoke import SMOKE

DIAGNOSE = REPO_ROOT / "playbooks" / "diagnose.yml"
VARIANTS = "server0:npu-name=910B3,driver=23.0.7,tls-form=short;server1:npu-name=910B2C,driver=26.0.rc1"


def test_prepare_smoke_train_and_diagnose_run_on_a_cluster_of_real_variants(sim_cluster):
    cluster = sim_cluster(preset_ips=False, devices=2, variant=VARIANTS)
    extra = {**cluster.inventory_vars, **PLAN, "ascend_device_ip_device_count": 2}
    # -e junit=PATH on each run (issue 35 item 4): the reports are read with junitparser, as CI reads them
    reports = cluster.root / "junit"
    prepared = run_playbook(PREPARE, SIM_INVENTORY, extra_vars={**extra, "junit": str(reports / "prepare.xml")})
    assert prepared.rc == 0, prepared
    suite, cases = read_report(reports / "prepare.xml")
    assert suite.name == "ascend.cluster.prepare" and suite.failures == 0
    assert {(c.classname, c.name) for c in cases} == {
        (f"prepare.{stage}", host)
        for stage in ("facts", "device_ip", "firewall", "net_health", "rank_table")
        for host in ("server0", "server1")
    }
    assert {c.outcome for c in cases} == {"passed"}, cases
    report = json.loads((cluster.root / "controller" / "net_health.json").read_text())
    # the short TLS form (no preconfigured field) reads its switch like the full one
    assert report["ok"] and {row["tls"] for row in report["rows"]} == {"off"}, report

    allowed = {"ascend_launch_allow_mixed_versions": True}
    smoke = run_playbook(SMOKE, SIM_INVENTORY, extra_vars=launch_vars(cluster, np=4, junit=str(reports / "smoke.xml"), **allowed))
    assert smoke.rc == 0, smoke
    suite, cases = read_report(reports / "smoke.xml")
    assert suite.failures == 0 and [c.name for c in cases if c.classname == "smoke.rank"] == [
        "server0 device 0 rank 0",
        "server0 device 1 rank 1",
        "server1 device 0 rank 2",
        "server1 device 1 rank 3",
    ], cases
    # server0's packages fit (the 23.0.7 files); server1's driver left none to read: said once, naming it alone
    unchecked = [line for line in smoke.output.splitlines() if "was not fully checked" in line]
    assert len(unchecked) == 1 and "on server1: the driver's version.info was not found" in unchecked[0], smoke

    env = {"STEPS": "3", "STEP_S": "0.1", "FAIL_RANK": "3", "FAIL_STEP": "2"}
    with cluster["server1"].hold(1) as leftover:  # a process on server1's device 1, as its 26.x table lists it
        trained = run_playbook(
            TRAIN,
            SIM_INVENTORY,
            extra_vars=launch_vars(cluster, np=4, kill_stale=True, ascend_train_env=env, junit=str(reports / "train.xml"), **allowed),
        )
        assert leftover.wait(timeout=10) != 0, "kill_stale did not stop the process the 26.x table named"
    assert trained.rc != 0 and "rank 3 (server 127.0.1.2, device 1) exit 1" in trained.stdout, trained
    # the failed job's report, written although the play failed: each server's pre-flight, each rank - rank 3 failed with
    # its one-line cause, the ranks fail-fast stopped skipped
    suite, cases = read_report(reports / "train.xml")
    assert [(c.classname, c.name, c.outcome) for c in cases if c.classname == "train.preflight"] == [
        ("train.preflight", "server0", "passed"),
        ("train.preflight", "server1", "passed"),
    ]
    ranks = {c.name: c for c in cases if c.classname == "train.rank"}
    assert sorted(ranks) == [
        "127.0.1.1 device 0 rank 0",
        "127.0.1.1 device 1 rank 1",
        "127.0.1.2 device 0 rank 2",
        "127.0.1.2 device 1 rank 3",
    ]
    assert (ranks["127.0.1.2 device 1 rank 3"].outcome, ranks["127.0.1.2 device 1 rank 3"].message) == ("failed", "exit 1")
    assert suite.failures == 1 and {c.outcome for name, c in ranks.items() if "rank 3" not in name} <= {"skipped", "passed"}
    trained_job = next(p.name for p in (cluster.root / "runs").iterdir() if not p.name.startswith("smoke-"))
    assert sorted(rank_states(cluster, trained_job)) == [0, 1, 2, 3]

    diag_vars = {k: v for k, v in launch_vars(cluster).items() if k != "train_command"}
    diagnosed = run_playbook(DIAGNOSE, SIM_INVENTORY, extra_vars=diag_vars)
    assert diagnosed.rc == 0, diagnosed
    job_id = next(p.name for p in (cluster.root / "runs").iterdir() if not p.name.startswith("smoke-"))
    diagnosis = json.loads((cluster.root / "controller" / job_id / "diagnosis.json").read_text())
    assert "rank 3" in json.dumps(diagnosis), diagnosis


def test_a_first_generation_server_printing_the_bare_910b_reads_as_910a(sim_cluster):
    """One module run: npu-smi's bare ``910B`` with its DDR in use is the first-generation 910 (its rings, template 2, the
    smp layout apply), not A2 as the name alone read before."""
    server = sim_cluster(servers=1, chip="910A", variant="server0:npu-name=910B").servers[0]
    args = {"hccn_conf": str(server.hccn_conf), "cann_dir": str(server.state_dir.parent / "Ascend")}
    facts = run_module("hccn_facts", args, env=server.env)["ansible_facts"]["ascend_npu"]
    assert (facts["chip"], facts["chip_name"], facts["chip_problem"]) == ("910A", "910B", None)
