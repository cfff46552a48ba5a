"""ascend.cluster.collect on the test bed (issue 35 item 3): a job's support bundle with one of its servers unreachable.

A job of four ranks on h1 and h2 fails (rank 1 exits 1); then h2's management link goes down - to the controller a
server that died - and collect still writes the bundle: h1's part, h2 named as not reached in its manifest.
"""

from __future__ import annotations

import json
import tarfile

import pytest

from tests.helpers.ansible_cli import run_playbook
from tests.helpers.collection import REPO_ROOT
from tests.testbed.test_launch_bed import TRAIN, bed_vars

COLLECT = REPO_ROOT / "playbooks" / "collect.yml"
SECRET = "hf_bed_secret_value"


@pytest.mark.testbed
def test_collect_bundles_the_job_from_the_servers_it_reaches_and_names_the_one_it_cannot(launch_bed):
    bed, root = launch_bed
    env = {"STEPS": "3", "STEP_S": "0.2", "FAIL_RANK": "1", "FAIL_STEP": "2", "HF_TOKEN": SECRET}
    trained = run_playbook(TRAIN, bed.inventory, extra_vars=bed_vars(launch_bed, "collect-1", np=4, ascend_train_env=env))
    assert trained.rc != 0 and "rank 1 " in trained.stdout, str(trained)
    role_vars = {k: v for k, v in bed_vars(launch_bed, "collect-1").items() if k.startswith("ascend_") and k != "ascend_job_id"}
    out = root / "bundle.tar.gz"
    with bed.dead("h2"):
        # fresh connections, as an operator's next run gets them (the train run's SSH master to h2 died with its link)
        done = run_playbook(
            COLLECT,
            bed.inventory,
            env={"ANSIBLE_SSH_ARGS": "-o ControlMaster=no"},
            extra_vars=dict(role_vars, job_id="collect-1", max_mb=20, out=str(out)),
        )
    assert done.rc == 0, str(done)
    assert f"collect: job collect-1: {out} (1 of 2 server(s)); not reached: h2" in done.stdout, str(done)
    assert oct(out.stat().st_mode & 0o777) == "0o600"
    with tarfile.open(out) as tar:
        got = {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}  # type: ignore[union-attr]
    manifest = json.loads(got["support-collect-1/manifest.json"])
    assert [u["host"] for u in manifest["unreachable"]] == ["h2"] and "could not be reached" in manifest["unreachable"][0]["why"]
    assert manifest["servers"]["h2"]["manifest"] is None and manifest["failed"] == []
    h1 = manifest["servers"]["h1"]["manifest"]
    assert h1["job_id"] == "collect-1" and h1["dropped"] == []
    # h1's ranks (0 and 1), their logs and state; the job's group view; npu-smi and hccn_tool as the bed's servers answer
    assert got["support-collect-1/h1/run/device_1/train.log"] and json.loads(got["support-collect-1/h1/run/device_1/state.json"])["rc"] == 1
    assert "support-collect-1/h1/job/job.json" in got and "support-collect-1/h1/npu-smi/info.txt" in got
    assert got["support-collect-1/h1/hccn_tool/0_link.txt"].startswith(b"link status: ")
    # the secret: the job's group key never, a secret-looking variable's value scrubbed wherever env.log went
    assert not any(name.endswith("/group.key") for name in got) and not any(SECRET.encode() in data for data in got.values())
    assert "HF_TOKEN=***scrubbed***" in got["support-collect-1/h1/run/device_0/env.log"].decode()
    assert any(s.endswith("/device_0/env.log: HF_TOKEN") for s in h1["scrubbed"])
    # the controller's own files of the job (the launch's summary)
    assert json.loads(got["support-collect-1/controller/summary.json"])["job_id"] == "collect-1"
