"""AOE gradient tuning (aoe=true / use_library) on the simulated 2 x 8 cluster.

The stand-in examples/train/aoe_tuner.sh behaves like a training under the AOE tuner: with AOE_MODE
it writes $TUNE_BANK_PATH/Ascend910B1_gradient_fusion.json (and fails without a bank directory);
without it, it trains and logs whether TUNE_BANK_PATH was set and the repository readable. Every
process appends a line to TUNER_TRACE, so the tests count the processes that really ran. Each
simulated server has its own repository directory (ascend_aoe_bank_dir under its sim directory).
"""

from __future__ import annotations

import json
import stat

import pytest

from tests.helpers.ansible_cli import run_playbook
from tests.helpers.collection import REPO_ROOT
from tests.helpers.runs import read_env_log

from .conftest import SIM_INVENTORY
from .test_launch_playbooks import launch_vars

TRAIN = REPO_ROOT / "playbooks" / "train.yml"
TUNER = REPO_ROOT / "examples" / "train" / "aoe_tuner.sh"
BANK_NAME = "Ascend910B1_gradient_fusion.json"


def aoe_vars(cluster, job_id, **extra):
    """launch_vars (sim inventory, per-server job/lock dirs) plus per-server bank dirs and the stand-in tuner."""
    train_env = {"STEPS": "2", "STEP_S": "0.05", "TUNER_TRACE": f"{cluster.root}/trace"}
    train_env.update(extra.pop("train_env", {}))
    base = launch_vars(
        cluster,
        ascend_job_id=job_id,
        ascend_aoe_bank_dir="{{ ascend_sim_server }}/tune_bank",
        ascend_train_env=train_env,
        train_command=f"bash {TUNER} --data_path=/data",
        np=16,
    )
    base.update(extra)
    return base


def bank_dir(cluster, server):
    return cluster.root / server / "tune_bank"


def trace(cluster):
    path = cluster.root / "trace"
    return path.read_text().splitlines() if path.exists() else []


def envs(cluster, job_id):
    """Every rank's env.log of the job, by rank id."""
    out = {}
    for path in (cluster.root / "runs" / job_id).glob("device_*/env.log"):
        out[int(path.parent.name.split("_")[1])] = read_env_log(path)
    return out


def nothing_started(cluster):
    assert trace(cluster) == []
    assert not (cluster.root / "runs").exists()
    assert not any((cluster.root / s / "jobs").exists() for s in ("server0", "server1"))


def test_aoe_tunes_once_distributes_then_training_uses_the_bank_unless_use_library_false(sim_cluster):
    cluster = sim_cluster()
    # 1. aoe=true: one process, rank 0 (server0, device 0), AOE_MODE=4 and TUNE_BANK_PATH
    res = run_playbook(TRAIN, SIM_INVENTORY, extra_vars=aoe_vars(cluster, "tune", aoe=True))
    assert res.rc == 0, res
    bank0 = bank_dir(cluster, "server0")
    assert trace(cluster) == [f"rank=0 device=0 AOE_MODE=4 TUNE_BANK_PATH={bank0}"]
    tuned = envs(cluster, "tune")
    assert list(tuned) == [0]
    assert (tuned[0]["AOE_MODE"], tuned[0]["TUNE_BANK_PATH"], tuned[0]["DEVICE_ID"]) == ("4", str(bank0), "0")
    # rank 0's own environment: the job's size and table
    assert (tuned[0]["RANK_ID"], tuned[0]["RANK_SIZE"]) == ("0", "16")
    written = (bank0 / BANK_NAME).read_text()
    assert json.loads(written)["soc"] == "Ascend910B1"
    for copy in (bank_dir(cluster, "server1") / BANK_NAME, cluster.root / "controller" / "tune_bank" / BANK_NAME):
        assert copy.read_text() == written
    server1_copy = bank_dir(cluster, "server1") / BANK_NAME
    assert stat.S_IMODE(server1_copy.stat().st_mode) == 0o644
    assert stat.S_IMODE(bank_dir(cluster, "server1").stat().st_mode) == 0o755
    assert "No training ran in this play" in res.stdout
    assert "The next run without aoe exports TUNE_BANK_PATH" in res.stdout

    # 2. the next run (use_library unset): every rank exports its server's TUNE_BANK_PATH and reads the file
    res = run_playbook(TRAIN, SIM_INVENTORY, extra_vars=aoe_vars(cluster, "train-bank"))
    assert res.rc == 0, res
    ranks = envs(cluster, "train-bank")
    assert sorted(ranks) == list(range(16))
    for rank, env in ranks.items():
        server = "server0" if rank < 8 else "server1"
        assert env["TUNE_BANK_PATH"] == str(bank_dir(cluster, server)), rank
        assert "AOE_MODE" not in env
        log = (cluster.root / "runs" / "train-bank" / f"device_{rank}" / "train.log").read_text()
        assert f"bank: {bank_dir(cluster, server) / BANK_NAME} readable" in log
    assert len(trace(cluster)) == 1 + 16

    # 3. use_library=false: nobody gets TUNE_BANK_PATH
    res = run_playbook(TRAIN, SIM_INVENTORY, extra_vars=aoe_vars(cluster, "train-nolib", use_library=False))
    assert res.rc == 0, res
    ranks = envs(cluster, "train-nolib")
    assert sorted(ranks) == list(range(16))
    assert not any("TUNE_BANK_PATH" in env for env in ranks.values())
    log = (cluster.root / "runs" / "train-nolib" / "device_9" / "train.log").read_text()
    assert "bank: TUNE_BANK_PATH unset" in log


@pytest.mark.parametrize(
    "extra, message",
    [
        (
            {"aoe": True, "use_library": True},
            "aoe=true (tune, writing the repository) and use_library=true (train with the repository) cannot be combined",
        ),
        # the job environment's own TUNE_BANK_PATH / AOE_MODE (filter aoe_env_conflict, called once per server for
        # every run): one playbook run here; its variants (no aoe, AOE_MODE, use_library) in tests/unit/plugins/plugin_utils/test_aoe.py
        ({"aoe": True, "train_env": {"TUNE_BANK_PATH": "/elsewhere"}}, "sets TUNE_BANK_PATH=/elsewhere but the role sets TUNE_BANK_PATH="),
        ({"aoe": True, "ascend_aoe_mode": 3}, "ascend_aoe_mode"),
        ({"aoe": True, "launcher": "torchrun"}, "aoe=true runs one tuning process on rank 0; it cannot run under launcher=torchrun"),
    ],
)
def test_refused_before_anything_starts(sim_cluster, extra, message):
    cluster = sim_cluster()
    res = run_playbook(TRAIN, SIM_INVENTORY, extra_vars=aoe_vars(cluster, "refused", **extra))
    assert res.rc != 0, res
    assert message in res.stdout, res
    nothing_started(cluster)


A3_PLAY = """\
- name: The launch role on servers that report A3 (the simulated 910B servers stand in for them)
  hosts: ascend
  gather_facts: false
  roles:
    - role: ascend.cluster.rank_table
  tasks:
    - name: Make the servers' facts say A3 (the rank table is already built and written)
      ansible.builtin.set_fact:
        ascend_npu: "{{ ansible_facts.ascend_npu | combine({'chip': 'A3'}) }}"
        cacheable: true  # a cacheable fact lands in ansible_facts, which is all the roles read
    - name: Launch
      ansible.builtin.include_role:
        name: ascend.cluster.launch_training
"""


@pytest.mark.parametrize(
    "mode, message",
    [
        (4, "A3 supports AOE_MODE 2 only: server0 is an A3 server and ascend_aoe_mode is 4"),
        (2, "AOE tuning done: Ascend910B1_gradient_fusion.json"),
    ],
)
def test_aoe_mode_on_a3_2_only(sim_cluster, tmp_path, mode, message):
    # The sim's A3 servers need SuperPoD ids for their 1.2 table, which the rank_table role does not
    # take yet; the A3 check only reads the servers' chip fact, so 910B servers reporting A3 test it.
    cluster = sim_cluster()
    play = tmp_path / "a3.yml"
    play.write_text(A3_PLAY)
    extra = aoe_vars(cluster, "a3", ascend_aoe=True, ascend_aoe_mode=mode, ascend_np=16)
    extra["ascend_train_command"] = extra.pop("train_command")
    res = run_playbook(play, SIM_INVENTORY, extra_vars=extra)
    assert message in res.stdout, res
    if mode == 4:
        assert res.rc != 0
        assert "set ascend_aoe_mode=2 (operator tuning)" in res.stdout
        nothing_started(cluster)
    else:
        assert res.rc == 0, res
        assert trace(cluster) == [f"rank=0 device=0 AOE_MODE=2 TUNE_BANK_PATH={bank_dir(cluster, 'server0')}"]


def test_use_library_true_without_a_bank_names_the_servers(sim_cluster):
    cluster = sim_cluster()
    res = run_playbook(TRAIN, SIM_INVENTORY, extra_vars=aoe_vars(cluster, "nobank", use_library=True))
    assert res.rc != 0, res
    assert "use_library=true, but there is no AOE tuning repository (*_gradient_fusion.json) on" in res.stdout, res
    assert f"server0 ({bank_dir(cluster, 'server0')}), server1 ({bank_dir(cluster, 'server1')})" in res.stdout
    assert "run the tuning first (aoe=true" in res.stdout
    nothing_started(cluster)


def test_bank_on_one_server_only_names_the_other(sim_cluster):
    cluster = sim_cluster()
    bank_dir(cluster, "server0").mkdir()
    (bank_dir(cluster, "server0") / BANK_NAME).write_text("{}\n")
    res = run_playbook(TRAIN, SIM_INVENTORY, extra_vars=aoe_vars(cluster, "halfbank"))
    assert res.rc != 0, res
    assert (
        f"the AOE tuning repository (*_gradient_fusion.json) is on server0 ({bank_dir(cluster, 'server0')}) "
        f"but missing on server1 ({bank_dir(cluster, 'server1')})"
    ) in res.stdout, res
    assert "Re-run the tuning (aoe=true" in res.stdout and "or use_library=false" in res.stdout
    nothing_started(cluster)


def test_tuner_that_writes_nothing_is_a_clear_error(sim_cluster):
    cluster = sim_cluster()
    # An old repository from an earlier tuning is not mistaken for this run's result.
    bank_dir(cluster, "server0").mkdir()
    old = bank_dir(cluster, "server0") / "Ascend910A_gradient_fusion.json"
    old.write_text("{}\n")
    res = run_playbook(TRAIN, SIM_INVENTORY, extra_vars=aoe_vars(cluster, "tune-nothing", aoe=True, train_env={"AOE_TUNER_WRITES": "0"}))
    assert res.rc != 0, res
    assert (f"exited 0 but wrote no *_gradient_fusion.json in {bank_dir(cluster, 'server0')}") in res.stdout, res
    assert f"`bash {TUNER} --data_path=/data` with AOE_MODE=4" in res.stdout
    assert "tune-nothing/device_0/train.log" in res.stdout
    assert len(trace(cluster)) == 1
    assert not bank_dir(cluster, "server1").exists()
    assert not (cluster.root / "controller" / "tune_bank").exists()


def test_failing_tuner_fails_with_its_log_and_distributes_nothing(sim_cluster):
    cluster = sim_cluster()
    res = run_playbook(
        TRAIN, SIM_INVENTORY, extra_vars=aoe_vars(cluster, "tune-fail", aoe=True, train_env={"AOE_TUNER_WRITES": "0", "EXIT_CODE": "5"})
    )
    assert res.rc != 0, res
    assert "rank 0 (server 127.0.1.1, device 0) failed first: exit code 5" in res.stdout, res
    assert "AOE gradient tuning (mode 4) step 2/2" in res.stdout  # the log's tail
    assert "the AOE tuning run on server0 failed" in res.stdout
    assert not bank_dir(cluster, "server1").exists()
    assert not (cluster.root / "controller" / "tune_bank").exists()


def test_several_files_written_the_newest_is_distributed_and_named(sim_cluster):
    cluster = sim_cluster()
    res = run_playbook(
        TRAIN, SIM_INVENTORY, extra_vars=aoe_vars(cluster, "tune-two", aoe=True, train_env={"ASCEND_SOC": "Ascend910B1 Ascend910B3"})
    )
    assert res.rc == 0, res
    bank0 = bank_dir(cluster, "server0")
    assert (
        f"the tuning run wrote {bank0}/Ascend910B3_gradient_fusion.json, {bank0}/Ascend910B1_gradient_fusion.json; "
        f"distributing the newest, {bank0}/Ascend910B3_gradient_fusion.json"
    ) in res.stdout, res
    assert sorted(p.name for p in bank_dir(cluster, "server1").iterdir()) == ["Ascend910B3_gradient_fusion.json"]
    assert sorted(p.name for p in (cluster.root / "controller" / "tune_bank").iterdir()) == ["Ascend910B3_gradient_fusion.json"]
