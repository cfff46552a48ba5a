"""The rank table a job uses is the job's (issue 26 item 7), on the simulated 2 x 8 cluster.

- The launch writes each job's own table into its run directory; ``RANK_TABLE_FILE`` names it and the shared
  ``ascend_rank_table_path`` is never written by the launch (also not by one that fails while staging).
- A table changed on one server after the launch wrote it - the hand on h2, 0.03 s after the launch checked it - is
  refused by that server's runners just before the start, naming the file and both digests; the job is stopped.
- rank_table.yml and prepare.yml refuse to rewrite the shared table while a job holds a server's devices, naming the
  job, before anything is changed; once the job has ended they write it.
"""

from __future__ import annotations

import hashlib
import json
import re

from ansible_collections.ascend.cluster.plugins.module_utils._job import files
from tests.helpers.ansible_cli import run_playbook, start_playbook
from tests.helpers.collection import REPO_ROOT
from tests.helpers.procs import alive, wait_for
from tests.helpers.runs import rank_states, read_env_log, snapshot

from .conftest import SIM_INVENTORY
from .test_launch_playbooks import STOP, TRAIN, launch_vars

RANK_TABLE = REPO_ROOT / "playbooks" / "rank_table.yml"
PREPARE = REPO_ROOT / "playbooks" / "prepare.yml"
SERVERS = ("server0", "server1")
LONG_RUN = {"STEPS": "100000", "STEP_S": "0.5"}


def shared_tables(cluster) -> dict:
    """Each server's shared table (``ascend_rank_table_path`` of the simulated inventory), None where there is none."""
    return {s: (p.read_text() if (p := cluster.root / s / "etc" / "rank_table.json").exists() else None) for s in SERVERS}


def test_a_table_changed_on_one_server_after_the_launch_wrote_it_is_refused_there_and_stops_the_job(sim_cluster, tmp_path):
    cluster = sim_cluster()
    # each server its own run directory (on a real cluster they are on different machines), so that only server1's
    # copy is changed; a wide gate margin leaves the test time to change it between the gate's opening and the start
    extra = launch_vars(
        cluster,
        np=16,
        ascend_job_id="tampered",
        ascend_launch_run_root="{{ ascend_sim_server }}/runs",
        ascend_launch_gate_margin_s=4,
        ascend_train_env=LONG_RUN,
    )
    tables = {s: cluster.root / s / "runs" / "tampered" / "rank_table.json" for s in SERVERS}
    with open(tmp_path / "out.log", "w") as out:
        proc = start_playbook(TRAIN, SIM_INVENTORY, extra, out)
        try:
            wait_for((cluster.root / "server1" / "jobs" / "tampered" / "gate").exists, 240, "the gate opened on server1")
            written = tables["server1"].read_text()
            tables["server1"].chmod(0o644)
            tables["server1"].write_text(written.replace('"rank_id": "15"', '"rank_id": "14"'))  # what a hand did on h2
            proc.wait(240)
        finally:
            if proc.poll() is None:
                proc.kill()
    output = (tmp_path / "out.log").read_text()
    assert proc.returncode != 0, output
    launch_sha = hashlib.sha256(written.encode()).hexdigest()
    changed_sha = hashlib.sha256(tables["server1"].read_bytes()).hexdigest()
    refusal = (
        f"the rank table {tables['server1']} was changed after the launch wrote it: its sha256 is {changed_sha}, the launch wrote "
        f"{launch_sha}; the rank was not started on it. Find what rewrote the job's table, then launch the job again"
    )
    # the job fails naming the first refused rank, its server and device, the file and both digests
    failed = re.search(
        r"FAILED: train tampered: rank (8|9|1[0-5]) \(server 127\.0\.1\.2, device \d\) could not start: " + re.escape(refusal), output
    )
    assert failed, output
    # every rank read its own server's copy, which the launch wrote (the same table on both servers)
    assert tables["server0"].read_text() == written
    for server, first in (("server0", 0), ("server1", 8)):
        states = rank_states(cluster.root / server / "runs" / "tampered")
        assert sorted(states) == list(range(first, first + 8)), states
        assert read_env_log(cluster.root / server / "runs" / "tampered" / f"device_{first}" / "env.log")["RANK_TABLE_FILE"] == str(
            tables[server]
        )
        assert not any(alive(pid) for s in states.values() for pid in (s.get("runner_pid"), s.get("pid")) if pid), states
        if server == "server1":
            # none started: refused just before the start, naming the file and both digests - or, once a sibling was
            # refused first, given up at the gate for its abort line
            refused = [s for s in states.values() if s["phase"] == "refused"]
            assert refused and all(s["error"] == refusal for s in refused), states
            assert all(
                s["phase"] == "aborted" and "could not start: " + refusal in s["stopped_by"] for s in states.values() if s not in refused
            )
            assert not any(s.get("pid") for s in states.values()), states
        else:  # the launch's table: started, then stopped by the job's group (or given up at the gate)
            assert all(s["phase"] in ("exited", "aborted") and "could not start: " + refusal in s["stopped_by"] for s in states.values()), (
                states
            )
    assert shared_tables(cluster) == {"server0": None, "server1": None}  # the launch never writes the shared path


def test_rank_table_and_prepare_refuse_while_a_job_holds_the_devices_and_write_once_it_ended(sim_cluster):
    cluster = sim_cluster()
    first = run_playbook(RANK_TABLE, SIM_INVENTORY, extra_vars=launch_vars(cluster))
    assert first.rc == 0, first
    before = shared_tables(cluster)
    assert json.loads(before["server0"])["server_count"] == "2"
    # a job on server0 only (np=8, whole servers first); its launch leaves the shared tables alone
    train = run_playbook(
        TRAIN,
        SIM_INVENTORY,
        extra_vars=launch_vars(cluster, np=8, spread=False, wait=False, ascend_job_id="holder", ascend_train_env=LONG_RUN),
    )
    assert train.rc == 0, train
    wait_for(lambda: all(s.get("phase") == "running" for s in rank_states(cluster.root / "runs" / "holder").values()), 60, "running")
    assert shared_tables(cluster) == before
    assert read_env_log(cluster.root / "runs" / "holder" / "device_0" / "env.log")["RANK_TABLE_FILE"] == str(
        cluster.root / "runs" / "holder" / "rank_table.json"
    )

    path = cluster.root / "server0" / "etc" / "rank_table.json"
    held = (
        f"the rank table {path} is not rewritten while a job holds this server's devices, nothing was changed: job holder holds "
        "devices 0, 1, 2, 3, 4, 5, 6, 7. Wait until the job ends (ascend.cluster.status shows it), or stop it "
        "(ascend.cluster.stop, given the job's id), then write the table again"
    )
    # the running job's own views (the coordinator's group.json, each member's member.json, the supervisor's results)
    # change as the job goes on, by themselves: every other file must stay as it is
    live = (files.GROUP_FILE, files.MEMBER_FILE, files.SUPERVISOR_FILE)

    def still() -> dict:
        return {name: data for name, data in snapshot(cluster, skip=("runs", "controller")).items() if name.rsplit("/", 1)[-1] not in live}

    unchanged = still()
    for playbook, extra in ((RANK_TABLE, {"np": 4}), (PREPARE, {})):
        refused = run_playbook(playbook, SIM_INVENTORY, extra_vars=launch_vars(cluster, **extra))
        assert refused.rc != 0, refused
        assert held in refused.stdout, refused
        # refused before any change: server1, which no job holds, keeps its table too; prepare changed no stage
        assert shared_tables(cluster) == before
        assert still() == unchanged

    stop = run_playbook(STOP, SIM_INVENTORY, extra_vars=launch_vars(cluster))
    assert stop.rc == 0, stop
    again = run_playbook(RANK_TABLE, SIM_INVENTORY, extra_vars=launch_vars(cluster, np=4))
    assert again.rc == 0, again
    after = shared_tables(cluster)
    assert after != before and len([d for s in json.loads(after["server0"])["server_list"] for d in s["device"]]) == 4


def test_a_launch_that_fails_while_staging_leaves_the_shared_tables_and_says_what_it_left(sim_cluster):
    """Rank 0's server cannot listen for the job's group after it recorded the job: the shared tables (written by
    rank_table.yml for 16 ranks; the job has 12) are as they were on both servers, and the message names what the job left."""
    cluster = sim_cluster()
    assert run_playbook(RANK_TABLE, SIM_INVENTORY, extra_vars=launch_vars(cluster)).rc == 0
    before = shared_tables(cluster)
    extra = launch_vars(cluster, np=12, ascend_job_id="nogroup", ascend_launch_group_address="192.0.2.1")
    res = run_playbook(TRAIN, SIM_INVENTORY, extra_vars=extra)
    assert res.rc != 0, res
    run_dir = cluster.root / "runs" / "nogroup"
    # exactly what is there: server0's record and the run directory (shared by both simulated servers: server1's ranks may
    # have made theirs by then); no lock of server0's was taken, its runners never started
    left = re.escape(
        f"left on this server: job nogroup's record {cluster.root}/server0/jobs/nogroup (group.key, job.json) and run directory {run_dir} ("
    )
    left += r"(device_\d+/, )*rank_table\.json\), kept for status and diagnose; no shared rank table was written"
    assert "cannot listen on 192.0.2.1 port" in res.stdout and re.search(left, res.stdout), res
    assert shared_tables(cluster) == before
    assert json.loads((run_dir / "rank_table.json").read_text())["server_count"] == "2"
    states = rank_states(run_dir)
    assert states and all(s["phase"] != "running" and not alive(s["runner_pid"]) for s in states.values()), states
