"""Real data-parallel training through ascend.cluster.train on the simulated 2 x 8 cluster.

examples/train/train_gloo.py (PyTorch CPU, torch.distributed over gloo standing in for HCCL) runs
as 16 ranks with the pytorch preset; the loss must fall on every rank and every rank must end
with the same weights. Needs build/torch-venv (``make torch-venv``: /usr/bin/python3 -m venv and
pip install torch==2.13.0, the CPU wheel on disk).
"""

from __future__ import annotations

import json
import re

from tests.helpers.ansible_cli import run_playbook
from tests.helpers.collection import REPO_ROOT
from tests.helpers.runs import read_env_log

from .conftest import SIM_INVENTORY
from .test_launch_playbooks import TRAIN, launch_vars, rank_states

TORCH_PYTHON = REPO_ROOT / "build" / "torch-venv" / "bin" / "python"
SCRIPT = REPO_ROOT / "examples" / "train" / "train_gloo.py"


def gloo_vars(cluster, **extra):
    return launch_vars(
        cluster,
        framework="pytorch",
        train_command=f"{TORCH_PYTHON} {SCRIPT} --steps 15",
        ascend_launch_master_port=29531,
        ascend_train_env={"GLOO_SOCKET_IFNAME": "lo", "OMP_NUM_THREADS": "1"},
        ascend_launch_stage_timeout_s=300,
        **extra,
    )


def test_sixteen_gloo_ranks_train_to_the_same_weights(sim_cluster):
    assert TORCH_PYTHON.exists(), "build/torch-venv is missing: run `make torch-venv`"
    cluster = sim_cluster()
    res = run_playbook(TRAIN, SIM_INVENTORY, extra_vars=gloo_vars(cluster, np=16), timeout=1200)
    assert res.rc == 0, res
    states = rank_states(cluster)
    assert sorted(states) == list(range(16)) and all(s["rc"] == 0 for s in states.values())
    job = next((cluster.root / "runs").iterdir())
    digests = set()
    for rank in range(16):
        log = (job / f"device_{rank}" / "train.log").read_text()
        losses = [float(m) for m in re.findall(r"^step \d+ loss ([0-9.]+)$", log, re.MULTILINE)]
        assert len(losses) == 15 and losses[-1] < losses[0] / 4, (rank, losses)
        digests.add(json.loads((job / f"device_{rank}" / "final_weights.json").read_text())["sha256"])
    assert len(digests) == 1, digests
    env0 = read_env_log(job / "device_9" / "env.log")
    assert (env0["MASTER_ADDR"], env0["WORLD_SIZE"], env0["RANK"], env0["LOCAL_RANK"], env0["HCCL_IF_IP"]) == (
        "127.0.1.1",
        "16",
        "9",
        "1",
        "127.0.1.2",
    )
