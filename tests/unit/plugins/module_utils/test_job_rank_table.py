"""The job's own rank table (issue 26 item 7): the launch writes it into the job's run directory and records its sha256;
each rank's runner checks the file just before it starts the rank, and refuses the rank - naming the file and both
digests, stopping the job - when someone changed it after the launch wrote it.

The modules run as subprocesses; the test plays the controller (records the job, opens the gate), as
test_job_supervisor does.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from typing import Any

import pytest

from ansible_collections.ascend.cluster.plugins.module_utils import _job_control as control
from ansible_collections.ascend.cluster.plugins.module_utils import _job_files as files
from ansible_collections.ascend.cluster.plugins.module_utils._job_preflight import lock_holder
from tests.helpers.ansible_cli import run_module
from tests.unit.plugins.module_utils.test_job_launch import one_rank_job
from tests.unit.plugins.module_utils.test_job_node_runner import PRINT_IDS, node_args
from tests.unit.plugins.module_utils.test_job_supervisor import ranks_args, staged, start

TABLE = json.dumps({"version": "1.0", "server_count": "1", "server_list": [], "status": "completed"}, indent=4) + "\n"
TAMPERED = TABLE.replace('"1"', '"2"')
SHA = hashlib.sha256(TABLE.encode()).hexdigest()
SHA_TAMPERED = hashlib.sha256(TAMPERED.encode()).hexdigest()


def record_with_own_table(tmp_path, ranks) -> str:
    """Record job ``j`` as the launch does: its own table written into its run directory, its sha256 in job.json."""
    own = files.job_table_path(str(tmp_path / "run"))
    job = {"job_id": "j", "run_dir": str(tmp_path / "run"), "ranks": ranks}
    recorded = control.record_with_table(str(tmp_path / "jobs"), job, own, TABLE, True)
    assert (recorded["rank_table_path"], recorded["rank_table_sha256"]) == (own, SHA)
    return own


def tamper(path: str) -> None:
    """What the hand on h2 did: rewrite the file in place (as root: its read-only mode does not stop that)."""
    with open(path, "w") as handle:
        handle.write(TAMPERED)


def run_on_a_changed_table(tmp_path, args: dict) -> tuple:
    """Record the job with its own table, start ``args``' ranks (training_ranks), change the table while they wait at
    the gate, open it; the module's result (once every runner ended) and the table's path."""
    own = record_with_own_table(tmp_path, args["ranks"])
    thread, result = start(dict(args, rank_table_path=own))
    job = staged(tmp_path, len(args["ranks"]))[0]
    tamper(own)
    control.open_gate(str(tmp_path / "jobs"), job, time.time() + 0.2)
    thread.join(60)
    assert result["failed"], result
    return result, own, job


def refusal(path: str) -> str:
    return (
        f"the rank table {path} was changed after the launch wrote it: its sha256 is {SHA_TAMPERED}, the launch wrote {SHA}; "
        "the rank was not started on it. Find what rewrote the job's table, then launch the job again"
    )


def test_a_table_changed_after_the_launch_wrote_it_refuses_every_rank_and_stops_the_job(tmp_path):
    """training_ranks (one runner per rank): the digest comes from the job record; the table is rewritten while the ranks
    wait at the gate; no command runs, every rank is refused naming the file and both digests, the job's abort line
    names the first, and the devices are free."""
    ranks = [{"rank_id": 0, "device_id": 0}, {"rank_id": 1, "device_id": 1}]
    result, own, job = run_on_a_changed_table(tmp_path, ranks_args(tmp_path, ranks, ["sh", "-c", f"touch {tmp_path}/ran_$RANK_ID"]))
    # each rank refused naming the file and both digests - or, once its sibling was refused first, given up at the gate for
    # that refusal's abort line (which of the two checks first is the machine's timing)
    refused = [s for s in result["ranks"] if s["phase"] == "refused"]
    assert refused and all(s["error"] == refusal(own) for s in refused), result["ranks"]
    given_up = [s for s in result["ranks"] if s not in refused]
    assert all(s["phase"] == "aborted" and "could not start: " in str(s.get("stopped_by")) for s in given_up), result["ranks"]
    assert not list(tmp_path.glob("ran_*"))  # no rank started
    abort = files.read_abort(str(tmp_path / "jobs" / "j")) or ""
    assert abort.startswith("rank ") and abort.endswith(" could not start: " + " ".join(refusal(own).split())), abort
    # status names the cause of each refused rank
    states = {r["rank_id"]: r for r in control.rank_states(str(tmp_path / "jobs"), job)}
    assert all((states[s["rank_id"]]["state"], states[s["rank_id"]]["error"]) == ("failed", refusal(own)) for s in refused), states
    assert lock_holder(str(tmp_path / "locks"), 0) is None and lock_holder(str(tmp_path / "locks"), 1) is None


@pytest.mark.parametrize("tampered", [False, True], ids=["the launch's table: runs", "changed: refused"])
def test_the_runner_checks_the_digest_it_was_given(tmp_path, tampered):
    """training_rank with rank_table_sha256 (the detached launch passes it to every runner): checked just before the
    start; the untouched table starts the rank."""
    table = tmp_path / "run" / "rank_table.json"
    table.parent.mkdir()
    table.write_text(TABLE)
    args = one_rank_job(tmp_path, ["sh", "-c", "echo started; exit 0"], rank_table_path=str(table), rank_table_sha256=SHA)
    result: dict = {}
    runner = threading.Thread(target=lambda: result.update(run_module("training_rank", args)))
    runner.start()
    job = control.load_job(str(tmp_path / "jobs"), "j")
    assert control.wait_staged(str(tmp_path / "jobs"), job, 30)[0]["state"] == "staged"
    if tampered:
        tamper(str(table))
    control.open_gate(str(tmp_path / "jobs"), job, time.time() + 0.2)
    runner.join(30)
    if not tampered:
        assert not result.get("failed") and result["rank"]["phase"] == "exited" and result["rank"]["rc"] == 0, result
        assert (tmp_path / "run" / "device_5" / "train.log").read_text() == "started\n"
        return
    assert result["failed"] and (result["rank"]["phase"], result["rank"]["error"]) == ("refused", refusal(str(table))), result
    assert not (tmp_path / "run" / "device_5" / "train.log").exists()
    assert files.read_abort(str(tmp_path / "jobs" / "j")) == "rank 5 could not start: " + " ".join(refusal(str(table)).split())


def test_a_table_removed_after_the_launch_wrote_it_is_refused_naming_the_file(tmp_path):
    args = one_rank_job(tmp_path, ["true"], rank_table_path=str(tmp_path / "gone.json"), rank_table_sha256=SHA)
    result: dict = {}
    runner = threading.Thread(target=lambda: result.update(run_module("training_rank", args)))
    runner.start()
    job = control.load_job(str(tmp_path / "jobs"), "j")
    assert control.wait_staged(str(tmp_path / "jobs"), job, 30)[0]["state"] == "staged"
    control.open_gate(str(tmp_path / "jobs"), job, time.time() + 0.1)
    runner.join(30)
    assert result["rank"]["phase"] == "refused", result
    assert result["rank"]["error"].startswith(f"the rank table {tmp_path}/gone.json cannot be read ([Errno 2] No such file or directory")
    assert result["rank"]["error"].endswith(f"the launch wrote sha256 {SHA} there: launch the job again")


def test_a_per_node_launcher_is_not_started_on_a_changed_table(tmp_path):
    """msrun mode: the server's one runner checks the table before it starts the launcher; both of its ranks are refused."""
    result, own, _job = run_on_a_changed_table(tmp_path, node_args(tmp_path, PRINT_IDS))
    assert [(s["rank_id"], s["phase"], s["error"]) for s in result["ranks"]] == [(2, "refused", refusal(own)), (3, "refused", refusal(own))]
    assert not (tmp_path / "run" / "node_1" / "launcher.log").exists()  # the launcher never started
    assert files.read_abort(str(tmp_path / "jobs" / "j")) == "rank 2 could not start: " + " ".join(refusal(own).split())


def test_a_staging_failure_says_exactly_what_the_job_left_on_the_server(tmp_path):
    """The job's record and run directory as they are, and the lock files of its devices that exist."""
    ranks = [{"rank_id": 0, "device_id": 0}, {"rank_id": 1, "device_id": 5}]
    own = record_with_own_table(tmp_path, ranks)
    (tmp_path / "run" / "device_0").mkdir()
    (tmp_path / "locks").mkdir()
    (tmp_path / "locks" / "device_0.lock").write_text("")
    states = [dict(ranks[0], state="staged", error=None), dict(ranks[1], state="failed", error="device 5 is locked")]
    job = {"job_id": "j", "run_dir": str(tmp_path / "run"), "ranks": ranks}
    message = control.staging_failure(states, control.left_behind(str(tmp_path / "jobs"), job, str(tmp_path / "locks")))
    assert message == (
        "ranks could not stage, nothing was started: rank 1 (device 5): device 5 is locked; left on this server: job j's record "
        f"{tmp_path}/jobs/j (job.json) and run directory {tmp_path}/run (device_0/, rank_table.json), kept for status and "
        f"diagnose, and the lock file of device 0 in {tmp_path}/locks; no shared rank table was written"
    )
    assert own == str(tmp_path / "run" / "rank_table.json")


def test_the_recorded_digest_is_of_the_very_bytes_that_were_checked(tmp_path, monkeypatch):
    """Issue 34: record_with_table checked the file it read back, then read it a second time for its sha256; a rewrite
    landing between the two reads (2 ms after the launch wrote it) was recorded as the launch's own table, and the ranks
    passed their check on it. Here every read of the table after the first finds it rewritten: the digest recorded is
    the checked table's, so each runner would refuse the rewritten file."""
    import builtins

    own = files.job_table_path(str(tmp_path / "run"))
    reads = []
    real_open = builtins.open

    def swapping_open(path: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        if str(path) == own and "r" in mode and "+" not in mode:
            reads.append(mode)
            if len(reads) > 1:  # the hand on the server was quicker than the second read
                tamper(own)
        return real_open(path, mode, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", swapping_open)
    job = {"job_id": "j", "run_dir": str(tmp_path / "run"), "ranks": [{"rank_id": 0, "device_id": 0}]}
    recorded = control.record_with_table(str(tmp_path / "jobs"), job, own, TABLE, True)
    monkeypatch.undo()
    assert recorded["rank_table_sha256"] == SHA, (recorded, reads)
    assert control.load_job(str(tmp_path / "jobs"), "j")["rank_table_sha256"] == SHA
    assert len(reads) == 1  # the table was read back once
