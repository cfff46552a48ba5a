# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pre-flight before a launch (``training_job state=preflight``, :func:`run`): is any selected device held, and
(optionally) free it; the chips' health, the HCCL NIC, the job's ports, the versions every server must share.

Three sources, all per device:

- ``npu-smi info``'s process section (the driver's truth: any process holding the NPU), read once with the
  chips' health by :func:`read_npu`, every device numbered as ``_npu.smi.chip_devices`` does (the Phy-ID on A3);
- our own job records whose ranks are still alive on the device (covers a controller that was
  interrupted, and processes that have not opened the device yet);
- the per-device ``flock`` (another launch of ours staged right now).

Runs on target hosts: Python 3.8+, stdlib only.
"""

from __future__ import annotations

import errno
import fcntl
import fnmatch
import os
import re
import signal
import time
from typing import TYPE_CHECKING

from ansible_collections.ascend.cluster.plugins.module_utils._command import TIMEOUT_RC
from ansible_collections.ascend.cluster.plugins.module_utils._host import listen_ports
from ansible_collections.ascend.cluster.plugins.module_utils._host import nic as host_nic
from ansible_collections.ascend.cluster.plugins.module_utils._job import files
from ansible_collections.ascend.cluster.plugins.module_utils._job.control import load_job, rank_states, stop_job
from ansible_collections.ascend.cluster.plugins.module_utils._job.procs import pid_alive, wait_gone
from ansible_collections.ascend.cluster.plugins.module_utils._npu import smi as npu_smi
from ansible_collections.ascend.cluster.plugins.module_utils._npu import versions as sw_versions

# device_<id>.lock (_job/files.py lock_path), and the text a rank's runner writes into it (job <id> rank <n> ...)
_LOCK_NAME = re.compile(r"^device_(\d+)\.lock$")
_LOCK_HOLDER = re.compile(r"^job (\S+) rank ")

if TYPE_CHECKING:
    from typing import Any, Callable

    from ansible_collections.ascend.cluster.plugins.module_utils._command import BinFinder, Runner


def read_npu(module: BinFinder, explicit: str | None = None, runner: Runner | None = None) -> tuple:
    """``npu-smi info`` read once: ``(info, None)`` with ``_npu.smi.read_info``'s dict, or ``(None, problem)`` saying in
    words what failed - npu-smi not found, the command failing, or an output without its NPU table or process section.

    The pre-flight refuses a launch on such a server unless told to go on without the chips' health and the
    processes holding the devices (``allow_unknown_health``); diagnose reports it.
    """
    binary = npu_smi.find_binary(module, explicit)
    if binary is None:
        if not explicit:
            return None, "npu-smi not found on PATH or in %s" % ", ".join(npu_smi.INSTALL_DIRS)
        return None, "npu-smi not found: %s is not %s" % (explicit, "an executable file" if os.sep in explicit else "on PATH")
    client = npu_smi.NpuSmi(module, binary, runner=runner)
    try:
        raw = client.run(["info"])
    except npu_smi.NpuSmiError as exc:
        if exc.rc == TIMEOUT_RC:
            return None, "%s info did not answer within %d s (a hung driver?)" % (binary, client.timeout)
        return None, " ".join(str(exc).split())  # one line: it goes into one refusal, or one warning line
    try:
        return npu_smi.read_info(raw), None
    except npu_smi.NpuSmiParseError as exc:
        # its first line with words in it (not a table's border), to show what it printed
        first = " ".join(next((line.split() for line in raw.splitlines() if any(c.isalnum() for c in line)), []))
        return None, "cannot parse the %s from npu-smi info, which printed %s" % (
            exc.what,
            repr(first[:80]) + (" ..." if len(raw.strip()) > len(first[:80]) else "") if first else "nothing",
        )


def read_versions(
    module: BinFinder, explicit: str | None, info: dict | None, devices: list, cann_dir: str | None, runner: Runner | None = None
) -> dict:
    """The versions besides the driver's (``info["version"]``) that every server of a job must share:
    ``{"firmware_version", "cann_toolkit_version", "cann_kernels_version"}`` (``_npu.versions``), and ``version_fit``:
    whether this server's driver, firmware and CANN work together (``_npu.versions.fit``: ``{"problems", "unknown"}``,
    from the packages' version files and the boards' ``Compatibility``). The firmware is read from the board of each
    NPU that holds one of ``devices`` (None without ``info``: npu-smi could not be read); CANN from its version files
    under ``cann_dir`` (unset: the default install directories)."""
    found = sw_versions.read_cann(cann_dir)
    firmware = None
    boards: dict = {}
    binary = npu_smi.find_binary(module, explicit) if info is not None else None
    if binary is not None and info is not None:
        npus = [info["npu_of"][device] for device in devices if device in info["npu_of"]]
        boards = sw_versions.read_boards(module, binary, npus, runner=runner)
        firmware = sw_versions.firmware_summary(dict((npu, board["firmware"] if board else None) for npu, board in boards.items()))
    fit = sw_versions.fit(sw_versions.read_packages(cann_dir), boards)
    return dict(found, firmware_version=firmware, version_fit=fit)


def chip_errors(module: BinFinder, explicit: str | None, info: dict, devices: list, runner: Runner | None = None) -> dict:
    """``{device: "Error Code ... (information)"}`` for ``devices``, from ``npu-smi info -t health -i <NPU> -c <chip>``
    (``_npu.smi.parse_health``): what the chip itself reports beside npu-smi info's one word. A device whose query fails
    or prints no code is left out."""
    binary = npu_smi.find_binary(module, explicit)
    if binary is None:
        return {}
    client = npu_smi.NpuSmi(module, binary, runner=runner)
    found = {}
    for device in devices:
        if device not in info["npu_of"]:
            continue
        try:
            raw = client.run(["info", "-t", "health", "-i", str(info["npu_of"][device]), "-c", str(info["chip_of"].get(device, 0))])
        except npu_smi.NpuSmiError:
            continue
        health = npu_smi.parse_health(raw)
        if health["error_codes"] or health["error_info"]:
            found[device] = "Error Code %s%s" % (
                " ".join(health["error_codes"]) or "NA",
                " (%s)" % health["error_info"] if health["error_info"] else "",
            )
    return found


def unknown_devices(info: dict, devices: list) -> str | None:
    """What ``info`` (:func:`read_npu`) does not show of ``devices``, in words (``npu-smi info shows no device 9 (it
    shows devices 0-7)``), or None when it shows them all."""
    absent = [device for device in devices if device not in info["health"]]
    if not absent:
        return None
    shown = sorted(info["health"])
    return "npu-smi info shows no device %s (it shows %s)" % (
        ", ".join(str(device) for device in absent),
        "devices " + ", ".join(str(device) for device in shown) if shown else "none",
    )


def lock_holder(lock_dir: str, device_id: int) -> str | None:
    """Who holds the device's lock (the text the holder wrote), or None when it is free."""
    path = files.lock_path(lock_dir, device_id)
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno not in (errno.EAGAIN, errno.EACCES):
                raise
            return os.read(fd, 4096).decode("utf-8", "replace").strip() or "another process"
        return None
    finally:
        os.close(fd)


def job_holders(job_root: str, devices: list | None) -> list:
    """``[{"job_id", "rank_id", "device_id", "pid"}]`` for recorded ranks still alive (staged or running) on ``devices``
    (None: on any device)."""
    held = []
    for job_id in files.list_jobs(job_root):
        try:
            job = load_job(job_root, job_id)
        except Exception:  # a half-written record is not a holder  # pylint: disable=broad-except
            continue
        for rank in rank_states(job_root, job):
            if (devices is None or rank["device_id"] in devices) and rank["state"] in ("staged", "running"):
                held.append(
                    {"job_id": job_id, "rank_id": rank["rank_id"], "device_id": rank["device_id"], "pid": rank["pid"] or rank["runner_pid"]}
                )
    return held


def server_jobs(job_root: str, lock_dir: str) -> list:
    """Every job of ours that holds devices of this server now, whatever devices: a recorded job with a rank staged or
    running, or a device lock held (a launch staging right now); one line per job, naming it and its devices ([] when no
    job holds any). What ``prepare`` and ``rank_table`` check before they write the shared rank table."""
    jobs: dict = {}
    for held in job_holders(job_root, None):
        jobs.setdefault("job %s" % held["job_id"], set()).add(int(held["device_id"]))
    try:
        names = os.listdir(lock_dir)
    except OSError:
        names = []
    for name in sorted(names):
        found = _LOCK_NAME.match(name)
        holder = lock_holder(lock_dir, int(found.group(1))) if found else None
        if found and holder:
            owner = _LOCK_HOLDER.match(holder)
            jobs.setdefault("job %s" % owner.group(1) if owner else "a lock holder (%s)" % holder, set()).add(int(found.group(1)))
    return [
        "%s holds device%s %s" % (who, "s" if len(devices) > 1 else "", ", ".join(str(d) for d in sorted(devices)))
        for who, devices in sorted(jobs.items())
    ]


def group_ports(job_root: str, taken: dict) -> dict:
    """``{port: job_id}`` for the ports of ``taken`` (``listen_ports.ports_in_use``) that a recorded job's group
    coordinator listens on: that job still runs (or is ending); stopping it frees the port."""
    coordinators = {}
    for job_id in files.list_jobs(job_root):
        view = files.read_json(os.path.join(files.job_dir(job_root, job_id), files.GROUP_FILE))
        if isinstance(view, dict) and isinstance(view.get("pid"), int) and pid_alive(view["pid"]):
            coordinators[view["pid"]] = job_id
    held = {}
    for port, who in taken.items():
        pid = listen_ports.owner_pid(who)
        if pid in coordinators:
            held[port] = coordinators[pid]
    return held


def _comm(pid: int, proc_root: str = "/proc") -> str | None:
    try:
        with open(os.path.join(proc_root, str(pid), "comm"), encoding="utf-8", errors="replace") as f:
            return f.read().strip()
    except OSError:
        return None


def local_pid(proc: dict, proc_root: str = "/proc") -> int | None:
    """The PID of an npu-smi process row (``_npu.smi.parse_npu_processes``) in this server's PID namespace, or None when
    it cannot be told.

    npu-smi before 26.x prints one PID, the host's. 26.x adds ``Process id in container``: a process in a container has
    its host PID in ``Process id`` and its own there - run in that container (as a launch often is), the host PID is
    another process or none. So with a container PID the one to signal is the PID that exists here under the printed
    name (npu-smi shortens names; an empty name matches any), the container's first; None when neither does - such a
    process is reported, never signalled blindly."""
    if proc.get("container_pid") is None:
        return proc["pid"]
    name = proc.get("name") or ""
    for pid in (proc["container_pid"], proc["pid"]):
        comm = _comm(pid, proc_root)
        if comm is not None and (not name or comm.startswith(name) or name.startswith(comm)):
            return pid
    return None


def find_busy(devices: list, lock_dir: str, job_root: str, npu_processes: list) -> list:
    """Every reason a selected device is not free: ``[{"device_id", "source", "detail", ...}]``."""
    busy = []
    for proc in npu_processes:
        if proc["device_id"] in devices:
            busy.append(
                dict(
                    proc,
                    source="npu-smi",
                    detail="process %d%s (%s) holds %s"
                    % (
                        proc["pid"],
                        "" if proc.get("container_pid") is None else ", PID %d in its container" % proc["container_pid"],
                        proc["name"],
                        proc.get("where") or "NPU %d" % proc["device_id"],
                    ),
                )
            )
    for held in job_holders(job_root, devices):
        busy.append(
            dict(held, source="job", detail="rank %d of job %s (pid %s) is still running" % (held["rank_id"], held["job_id"], held["pid"]))
        )
    for device in devices:
        holder = lock_holder(lock_dir, device)
        if holder:
            busy.append({"device_id": device, "source": "lock", "detail": "locked by %s" % holder})
    return sorted(busy, key=lambda b: (b["device_id"], b["source"]))


def kill_stale(busy: list, job_root: str, grace: float, jobs: tuple = ()) -> list:
    """Stop what ``find_busy`` found: our jobs via ``stop_job`` (and ``jobs``: those whose group holds a port the new job
    needs), other processes TERM then KILL."""
    actions = []
    for job_id in sorted(set(b["job_id"] for b in busy if b["source"] == "job") | set(jobs)):
        result = stop_job(job_root, load_job(job_root, job_id), grace, reason="kill_stale by a new launch")
        actions.append("stopped job %s ranks %s" % (job_id, result["stopped"]))
    pids = sorted(set(pid for pid in (local_pid(b) for b in busy if b["source"] == "npu-smi") if pid is not None))
    for pid in pids:
        try:
            os.kill(pid, signal.SIGTERM)
        except OSError:
            pass
    for pid in wait_gone(pids, grace):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    wait_gone(pids, 5.0)
    actions.extend("killed process %d" % p for p in pids)
    actions.extend(
        "left process %d (%s, PID %d in its container): no such process here to signal"
        % (b["pid"], b.get("name") or "?", b["container_pid"])
        for b in busy
        if b["source"] == "npu-smi" and local_pid(b) is None
    )
    return actions


TUNE_BANK_PATTERN = "*_gradient_fusion.json"


def tune_bank_files(directory: str) -> list:
    """The AOE tuning repository's files (``*_gradient_fusion.json``, regular files) directly in ``directory``, sorted."""
    try:
        names = os.listdir(directory)
    except OSError:
        return []
    return sorted(
        os.path.join(directory, name)
        for name in names
        if fnmatch.fnmatch(name, TUNE_BANK_PATTERN) and os.path.isfile(os.path.join(directory, name))
    )


def wait_free(check: Callable[[], list], timeout: float) -> list:
    """Call ``check()`` (-> busy list) until it is empty or ``timeout`` passes; the last list."""
    deadline = time.time() + timeout
    busy = check()
    while busy and time.time() < deadline:
        time.sleep(0.5)
        busy = check()
    return busy


class PreflightFailed(Exception):
    """The pre-flight refuses the launch: ``fields`` are the module's failure (``msg``, ``busy``, what was found)."""

    def __init__(self, msg: str, **fields: Any) -> None:
        super().__init__(msg)
        self.fields = dict(fields, msg=msg)


def chip_health(info: dict, devices: list, found: dict, errors: dict | None = None) -> dict:
    """The selected devices' health from ``info`` (:func:`read_npu`); :class:`PreflightFailed` on Alarm / Critical
    (Warning / UNKNOWN: the controller warns, naming the server), each named with the error code and information its
    chip reports (``errors``, :func:`chip_errors`) where it reports one."""
    health = dict((device, info["health"][device]) for device in devices if device in info["health"])
    name = info["name"] or "NPU"
    errors = errors or {}
    failing = [
        "device %d (%s): %s%s" % (d, name, h, ", %s" % errors[d] if d in errors else "")
        for d, h in sorted(health.items())
        if h in npu_smi.FAILING_HEALTH
    ]
    if failing:
        raise PreflightFailed(
            "chip health, nothing was started: npu-smi info shows %s. Such a chip fails the training: check it "
            "(npu-smi info -t health -i <NPU> -c <chip>, the driver's logs), then repair it or leave the device out of the "
            "job (np / npu_env)." % "; ".join(failing),
            busy=[],
            **dict(found, chip_health=health, chip_errors=errors),
        )
    return health


def run(module: BinFinder, p: dict, check_mode: bool = False, runner: Runner | None = None) -> dict:
    """The pre-flight of ``training_job`` (``p``: its parameters), in this order: npu-smi read once (chips' health, the
    processes on the devices; unreadable: refused unless ``allow_unknown_health``), the firmware and CANN versions, the
    AOE repository's files, the HCCL NIC, the job's ports, the devices' holders - freed with ``kill_stale`` (not in
    ``check_mode``). The module's result, or :class:`PreflightFailed` naming every cause."""
    devices = list(p["devices"])
    info, problem = read_npu(module, p["npu_smi"], runner=runner)
    if info is not None:
        problem = unknown_devices(info, devices)
    found: dict = dict(
        npu_smi_version=info["version"] if info else None,
        npu_smi_problem=problem,
        npu_smi_status="ok" if problem is None else "allowed" if p["allow_unknown_health"] else "refuse",
    )
    # firmware (each selected NPU's board) and CANN, which every server must share with the driver: judged on the controller
    found.update(read_versions(module, p["npu_smi"], info, devices, p["cann_dir"], runner=runner))
    if info:
        unhealthy = [device for device in devices if info["health"].get(device, "OK") != "OK"]
        found["chip_errors"] = chip_errors(module, p["npu_smi"], info, unhealthy, runner=runner) if unhealthy else {}
        found["chip_health"] = chip_health(info, devices, found, found["chip_errors"])
    else:
        found["chip_health"], found["chip_errors"] = {}, {}
    if found["npu_smi_status"] == "refuse":  # the controller refuses the launch naming every such server; nothing checked or stopped here
        return dict(changed=False, busy=[], **found)
    if p["bank_dir"]:
        found["bank_files"] = len(tune_bank_files(p["bank_dir"]))
    hccl_nic = host_nic.resolve(p["nic"], p["host_ip"])
    found.update(host_ip=hccl_nic["host_ip"], nic=hccl_nic["nic"])
    if hccl_nic["problem"]:
        raise PreflightFailed("HCCL's host NIC, nothing was started: %s" % hccl_nic["problem"], busy=[], **found)
    taken = listen_ports.ports_in_use(p["ports"])
    # a port a job of ours still holds (its group's coordinator) is that job's: stopping it frees the port, as its devices
    jobs_ports = group_ports(p["job_root"], taken)
    foreign = dict((port, who) for port, who in taken.items() if port not in jobs_ports)
    if foreign:
        raise PreflightFailed(
            "ports in use, nothing was started: %s. The job listens there (HCCL's host ports from HCCL_IF_BASE_PORT, "
            "60000 by default; the master port and the job's group port on rank 0's server) and would fail with EI0019 or "
            "could not start: stop what holds them, or move the job's ports (HCCL_IF_BASE_PORT in the job's environment, "
            "ascend_launch_master_port, ascend_launch_group_port)"
            % "; ".join("TCP port %d is listened on by %s" % item for item in sorted(foreign.items())),
            ports_in_use=foreign,
            busy=[],
            **found,
        )
    busy = find_busy(devices, p["lock_dir"], p["job_root"], info["processes"] if info else [])
    held = ["device %d: %s" % (b["device_id"], b["detail"]) for b in busy] + [
        "TCP port %d: the group port of job %s, which still runs on this server (a second job needs another ascend_launch_group_port)"
        % item
        for item in sorted(jobs_ports.items())
    ]
    if not held:
        return dict(changed=False, busy=[], **found)
    if not p["kill_stale"] or check_mode:
        raise PreflightFailed(
            "devices in use, nothing was started: %s. Stop them (ascend.cluster.stop), or let the launch stop them "
            "with kill_stale=true (role: ascend_launch_kill_stale=true), and retry." % "; ".join(held),
            busy=busy,
            ports_in_use=taken,
            **found,
        )
    actions = kill_stale(busy, p["job_root"], p["grace"], jobs=tuple(jobs_ports.values()))
    left = wait_free(lambda: left_held(module, p, devices, list(jobs_ports), runner), p["stale_timeout"])
    if left:
        raise PreflightFailed(
            "kill_stale: devices still held after %ss: %s"
            % (
                p["stale_timeout"],
                "; ".join(("device %d: %s" % (b["device_id"], b["detail"])) if b["device_id"] >= 0 else b["detail"] for b in left),
            ),
            busy=left,
            actions=actions,
            **found,
        )
    return dict(changed=True, busy=[], freed=busy, actions=actions, **found)


def left_held(module: BinFinder, p: dict, devices: list, ports: list, runner: Runner | None = None) -> list:
    """After ``kill_stale``: what still holds ``devices`` (npu-smi read again, job records, locks) and ``ports`` (the group
    ports of the jobs it stopped), as busy entries (a port's with ``device_id`` -1)."""
    again = read_npu(module, p["npu_smi"], runner=runner)[0]
    held = find_busy(devices, p["lock_dir"], p["job_root"], again["processes"] if again else [])
    still = listen_ports.ports_in_use(ports)
    return held + [{"device_id": -1, "detail": "TCP port %d is still listened on by %s" % item} for item in sorted(still.items())]
