# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""One server's ranks under a per-node launcher (torchrun, msrun): stage, gate, run it, report each rank.

The launcher mode's counterpart of :class:`RankRunner`, and built on it (the gate, abort and stop
handling are the same code). ONE runner per server:

- works in ``<run_dir>/node_<node_rank>/`` (``env.log``, ``launcher.log`` - the launcher's console -,
  ``logs/`` - the launcher's per-worker logs -, ``state.json``) and holds the lock of every device of
  the server from staging to exit (the launcher inherits them all);
- writes the same ``<run_dir>/device_<rank>/state.json`` for each of the server's ranks as a rank runner
  does, so gate, fail-fast, ``status``, ``stop`` and the report see ranks as in per-device mode: their
  ``pid`` / ``pgid`` is the launcher's (its own session), their ``runner_pid`` this runner's;
- copies each child's output from the launcher's per-worker log into ``device_<rank>/train.log`` as it
  grows (every second), so a rank's log tail is its own;
- samples each rank's ``train.log`` for progress as a rank runner does: a stall of any one rank stops the
  launcher (and so all of the server's ranks) and is that rank's failure;
- records each child process group it sees (``/proc``) and kills any left once the launcher has exited
  (torchrun starts every worker in its own session: a launcher killed with SIGKILL would leave them);
- records each process under the launcher in the ``pids`` of the rank its environment names (``RANK``,
  ``RANK_ID``), so that a rank's plogs are found by its own processes' pids, not the launcher's;
- at the end gives each rank the exit code the launcher reports for it, or the launcher's own
  (``_job.launcher.rank_outcomes``), and writes the failing rank's abort line as a rank runner does (with fail-fast:
  ``RankRunner.rank_failed``; without it the other servers' ranks run on - what the launcher itself does with its own
  workers when one fails is the launcher's rule, torchrun's or msrun's).

Runs on target hosts: Python 3.8+, stdlib only.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time

from ansible_collections.ascend.cluster.plugins.module_utils._job import files, progress
from ansible_collections.ascend.cluster.plugins.module_utils._job import launcher as launchers
from ansible_collections.ascend.cluster.plugins.module_utils._job.procs import kill_group, kill_groups, signal_death, stat_fields
from ansible_collections.ascend.cluster.plugins.module_utils._job.runner import (
    MAX_PIDS,
    DeviceBusy,
    RankRunner,
    clock_offset,
    command_argv,
    own_fault,
    take_device_lock,
)

LAUNCHER_LOG = "launcher.log"
FOLLOW_S = 1.0  # how often the children's logs are copied and their process groups looked up
CONSOLE_TAIL_BYTES = 256 * 1024  # the end of launcher.log read for its failure report
# Keys of the runner's own state that every rank's state.json repeats.
SHARED_KEYS = (
    "job_id",
    "runner_pid",
    "phase",
    "staged_at",
    "started",
    "gate_at",
    "pid",
    "pgid",
    "ended",
    "timed_out",
    "stopped_by",
    "error",
    "clock_offset",
)


def node_dir(run_dir: str, node_rank: int) -> str:
    return os.path.join(run_dir, "node_%d" % int(node_rank))


def start_time(pid: int) -> int | None:
    """When ``pid`` started (clock ticks since boot): tells a process from a later one with its pid."""
    fields = stat_fields(pid)
    return int(fields[19]) if fields and len(fields) > 19 else None


def proc_table() -> dict:
    """``{pid: (ppid, pgid)}`` of every process now (Linux ``/proc/<pid>/stat``)."""
    table = {}
    for name in os.listdir("/proc"):
        fields = stat_fields(name) if name.isdigit() else None
        if fields:
            table[int(name)] = (int(fields[1]), int(fields[2]))
    return table


def descendants(table: dict, root: int) -> list:
    """Every descendant of ``root`` in ``table`` (:func:`proc_table`)."""
    children: dict = {}
    for pid, (ppid, _pgid) in table.items():
        children.setdefault(ppid, []).append(pid)
    found = []
    todo = list(children.get(root, []))
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(children.get(pid, []))
    return found


def descendant_groups(table: dict, root: int) -> set:
    """The process groups of ``root``'s descendants in ``table`` (:func:`proc_table`), ``root``'s own excepted."""
    own = table.get(root, (0, root))[1]
    return set(table[pid][1] for pid in descendants(table, root)) - {own}


def environ_names_rank(pid: int, names: tuple, rank_id: int) -> bool:
    """Whether process ``pid``'s environment sets one of ``names`` to ``rank_id`` (Linux ``/proc/<pid>/environ``)."""
    try:
        with open("/proc/%d/environ" % int(pid), "rb") as handle:
            variables = handle.read().split(b"\0")
    except OSError:
        return False
    wanted = set(("%s=%d" % (name, int(rank_id))).encode("utf-8") for name in names)
    return any(variable in wanted for variable in variables)


def environ_rank(pid: int, names: tuple) -> int | None:
    """The rank id the first of ``names`` set in process ``pid``'s environment gives, or None (Linux ``/proc/<pid>/environ``)."""
    try:
        with open("/proc/%d/environ" % int(pid), "rb") as handle:
            variables = dict(v.split(b"=", 1) for v in handle.read().split(b"\0") if b"=" in v)
    except OSError:
        return None
    for name in names:
        value = variables.get(name.encode("utf-8"), b"")
        if value.isdigit():
            return int(value)
    return None


def still_ours(groups: dict) -> list:
    """The groups of ``{pgid: its leader's start time}`` that may still hold our processes.

    A group whose leader is gone keeps its id while any member lives (Linux gives no new process a
    pid in use as a group id); a leader pid that now names a process started at another time is a
    new, unrelated group, never signalled.
    """
    return sorted(g for g, started in groups.items() if start_time(g) in (None, started))


class NodeRunner(RankRunner):
    """Runs one server's ranks under its launcher; ``p`` is the ``training_ranks`` module's parameters."""

    def __init__(self, p: dict) -> None:
        ranks = list(p["ranks"])
        super().__init__(dict(p, rank_id=int(ranks[0]["rank_id"]), device_id=int(ranks[0]["device_id"])))
        self.ranks = ranks
        self.dir = node_dir(p["run_dir"], p["node_rank"])
        self.log_dir = os.path.join(self.dir, "logs")
        self.node = {
            "node_rank": p["node_rank"],
            "nnodes": p["nnodes"],
            "rank_size": p["rank_size"],
            "first_rank": int(ranks[0]["rank_id"]),
            "local_count": len(ranks),
            "devices": [int(r["device_id"]) for r in ranks],
            "master_addr": p["master_addr"],
            "master_port": p["master_port"],
            "log_dir": self.log_dir,
            "rank_table_path": p["rank_table_path"],
            "host_ip": p["host_ip"],
        }
        self.state = {
            "job_id": p["job_id"],
            "launcher": p["launcher"],
            "node_rank": p["node_rank"],
            "rank_ids": [int(r["rank_id"]) for r in ranks],
            "device_ids": self.node["devices"],
            "runner_pid": os.getpid(),
            "log": os.path.join(self.dir, LAUNCHER_LOG),
            "clock_offset": clock_offset(p),
        }
        self.outcomes: dict = {}  # rank id -> rank_outcomes entry, once the launcher has exited
        self.offsets: dict = {}  # worker log path -> bytes already copied to the rank's train.log
        self.groups: dict = {}  # the children's process groups seen while the launcher ran -> their leader's start time
        self.stalled: tuple | None = None  # (rank id, its stalled record) once a rank stalled
        self.classified: dict = {}  # pid under the launcher -> the rank its environment names (None: none of ours)
        self.rank_pid_lists: dict = {}  # rank id -> its processes seen, in order

    def save(self, **changes) -> dict:
        """The node's state, then each rank's (the shared keys, its ids, and its outcome once known)."""
        self.state.update(changes)
        files.write_json(os.path.join(self.dir, files.STATE_FILE), self.state)
        for rank in self.ranks:
            directory = files.rank_dir(self.p["run_dir"], rank["rank_id"])
            state = dict((k, self.state[k]) for k in SHARED_KEYS if k in self.state)
            state.update(
                rank_id=int(rank["rank_id"]),
                device_id=int(rank["device_id"]),
                launcher=self.p["launcher"],
                node_dir=self.dir,
                log=os.path.join(directory, files.TRAIN_LOG),
            )
            if self.rank_pid_lists.get(int(rank["rank_id"])):
                state["pids"] = self.rank_pid_lists[int(rank["rank_id"])]
            if self.stalled and self.stalled[0] == int(rank["rank_id"]):
                state["stalled"] = self.stalled[1]
            outcome = self.outcomes.get(int(rank["rank_id"]))
            if outcome is not None:
                state.update(rc=outcome["rc"], rc_from=outcome["rc_from"], stopped_by_launcher=outcome["stopped"])
                if outcome["error"] and not state.get("error"):
                    state["error"] = outcome["error"]
            files.write_json(os.path.join(directory, files.STATE_FILE), state)
        return self.state

    def environment(self) -> dict:
        env = dict(os.environ)
        env.update(
            launchers.launcher_env(
                self.p["launcher"], self.p["framework"], self.node, self.p["connect_timeout"], self.p["env"], self.p.get("tune_bank_path")
            )
        )
        return env

    def stage(self) -> list:  # type: ignore[override]
        """Directories, env.log, every device's lock, state ``staged``; returns the lock fds."""
        if self.p["umask"] is not None:
            os.umask(int(self.p["umask"], 8))
        for directory in [self.dir, self.log_dir] + [files.rank_dir(self.p["run_dir"], r["rank_id"]) for r in self.ranks]:
            os.makedirs(directory, exist_ok=True)
        self.save(phase=files.STAGING, staged_at=time.time())
        fds: list = []
        try:
            for rank in self.ranks:
                holder = "job %s rank %d (%s node %d) pid %d" % (
                    self.p["job_id"],
                    int(rank["rank_id"]),
                    self.p["launcher"],
                    self.p["node_rank"],
                    os.getpid(),
                )
                fds.append(take_device_lock(self.p["lock_dir"], rank["device_id"], holder))
        except DeviceBusy:
            for fd in fds:
                os.close(fd)
            raise
        env = self.environment()
        with open(os.path.join(self.dir, files.ENV_LOG), "w") as handle:
            handle.write("".join("%s=%s\n" % (k, env[k]) for k in sorted(env)))
        self.save(phase=files.STAGED)
        return fds

    def argv(self) -> list:
        program = self.p.get("launcher_path") or self.p["launcher"]
        built = launchers.launcher_argv(self.p["launcher"], program, self.p["argv"], self.node, self.p.get("launcher_args"))
        return command_argv(built, self.p["set_env"])

    def start(self, start_at: float, lock_fd: list) -> None:  # type: ignore[override]
        """Start the launcher at ``start_at``; ``lock_fd``: every device's lock fd (the launcher inherits them)."""
        if self.wait_for_gate(start_at) and self.table_intact():
            argv = self.argv()
            self.spawn(argv, LAUNCHER_LOG, start_at, tuple(lock_fd), header=("ascend.cluster: %r\n" % (argv,)).encode("utf-8"))

    def start_failed(self, started: float, error: str) -> None:
        """The launcher could not be started: every rank of the server ended with 127, which fails the job as a rank's failure
        does (:meth:`rank_failed`)."""
        self.outcomes = dict((r, {"rc": 127, "rc_from": "launcher", "stopped": False, "error": None}) for r in self.state["rank_ids"])
        super().start_failed(started, error)
        self.rank_failed(files.failed_line(self.state["rank_ids"][0], 127, error), siblings=False)

    def follow(self) -> None:
        """Copy what each child wrote since the last call into its rank's train.log; note the children's groups."""
        for local_rank, rank in enumerate(self.ranks):
            target = os.path.join(files.rank_dir(self.p["run_dir"], rank["rank_id"]), files.TRAIN_LOG)
            for source in launchers.worker_logs(self.p["launcher"], self.log_dir, local_rank, rank["rank_id"]):
                offset = self.offsets.get(source, 0)
                try:
                    with open(source, "rb") as handle:
                        handle.seek(offset)
                        data = handle.read()
                except OSError:
                    continue
                if data:
                    with open(target, "ab") as out:
                        out.write(data)
                    self.offsets[source] = offset + len(data)
        if self.child is not None and self.child.poll() is None:
            table = proc_table()
            for group in descendant_groups(table, self.child.pid) - set(self.groups):
                self.groups[group] = start_time(group)
            self.note_rank_pids(descendants(table, self.child.pid))

    def note_rank_pids(self, pids: list) -> None:
        """Add each new process under the launcher to the ``pids`` of the rank its environment names (a worker and
        what it starts), so that ``training_job state=diagnose`` finds every one's plog; saved when one was added."""
        names = launchers.RANK_VARIABLES.get(self.p["launcher"], ())
        ours = set(int(r["rank_id"]) for r in self.ranks)
        added = False
        for pid in pids:
            if pid in self.classified:
                continue
            rank = environ_rank(pid, names)
            self.classified[pid] = rank
            found = self.rank_pid_lists.setdefault(rank, []) if rank in ours else None
            if found is not None and len(found) < MAX_PIDS:
                found.append(pid)
                added = True
        if added:
            self.save()

    def console(self) -> str:
        """The end of the launcher's console log (where its failure report is)."""
        path = os.path.join(self.dir, LAUNCHER_LOG)
        try:
            with open(path, "rb") as handle:
                handle.seek(max(0, os.path.getsize(path) - CONSOLE_TAIL_BYTES))
                return handle.read().decode("utf-8", "replace")
        except OSError:
            return ""

    def wait(self) -> None:
        if self.child is None:
            return
        limit = self.state["started"] + self.p["max_runtime"]
        meters = self.progress_meters()
        timed_out = False
        orphaned = False
        while True:
            self.follow()
            if meters and not (timed_out or self.stalled):
                self.stalled = self.find_stall(meters)
            try:
                rc = self.child.wait(timeout=FOLLOW_S)
                break
            except subprocess.TimeoutExpired:
                if time.time() >= limit and not (timed_out or self.stalled or orphaned):
                    timed_out = True
                    kill_group(self.child.pid, signal.SIGTERM, self.p["kill_grace"])
                elif not (timed_out or self.stalled or orphaned) and self.orphaned():
                    orphaned = True
                    kill_group(self.child.pid, signal.SIGTERM, self.p["kill_grace"])
        # the launcher is gone: its children must be too (a launcher killed by SIGKILL leaves them behind)
        kill_groups(still_ours(self.groups), self.p["kill_grace"])
        self.follow()
        stopped_by = self.stop_reason()
        stalled_rank, stalled = self.stalled or (None, None)
        outcomes = launchers.rank_outcomes(
            self.p["launcher"], rc, self.state["rank_ids"], self.console(), stopped_by, stalled_rank, stalled and progress.why(stalled)
        )
        self.outcomes = dict((o["rank_id"], o) for o in outcomes)
        self.save(phase=files.EXITED, rc=rc, ended=time.time(), timed_out=timed_out, stopped_by=stopped_by)
        if rc == 0 and not timed_out and not stalled:
            return
        if stopped_by is None:
            blamed = next((o for o in outcomes if o["blame"]), outcomes[0])
            why = own_fault(timed_out, stalled) or signal_death(blamed["rc"]) or blamed["error"]
            self.rank_failed(files.failed_line(blamed["rank_id"], blamed["rc"], why), siblings=False)  # its ranks all ended with it
        elif files.read_abort(self.job_dir) is None:  # this runner was signalled: say so
            files.record_abort(self.job_dir, stopped_by)

    def progress_meters(self) -> dict:
        """``{rank id: its meter}`` of every rank's train.log when stall detection is on, else {}."""
        meters = {}
        for rank in self.ranks:
            meter = self.progress_meter(os.path.join(files.rank_dir(self.p["run_dir"], rank["rank_id"]), files.TRAIN_LOG))
            if meter is not None:
                meters[int(rank["rank_id"])] = meter
        return meters

    def find_stall(self, meters: dict) -> tuple | None:
        """Sample every rank's meter; the first stalled rank's ``(rank id, stalled record)``, once the launcher (which
        stops its other ranks) has been stopped; None while every rank makes progress."""
        now = time.time()
        silent = dict((rank, meters[rank].sample(now)) for rank in sorted(meters))
        stalled = [rank for rank in sorted(silent) if silent[rank] is not None]
        if not stalled or self.aborted() or self.child is None or self.child.poll() is not None:
            return None
        rank = stalled[0]
        record = self.stall(meters[rank], float(silent[rank] or 0), self.rank_pids(rank))
        kill_group(self.child.pid, signal.SIGTERM, self.p["kill_grace"])
        return rank, record

    def rank_pids(self, rank_id: int) -> list:
        """The processes of one rank under the launcher: its descendants whose environment names the rank."""
        if self.child is None:
            return []
        names = launchers.RANK_VARIABLES.get(self.p["launcher"], ())
        return [pid for pid in descendants(proc_table(), self.child.pid) if environ_names_rank(pid, names, rank_id)]

    def release(self, locks) -> None:
        for fd in locks:
            os.close(fd)
