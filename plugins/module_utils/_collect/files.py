# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The support bundle (``ascend.cluster.collect``): what a job left on one server, scrubbed and capped, and the bundle.

On each server (:func:`collect`, module ``support_files``), for the job (``latest`` as status and diagnose read it):

- the job's files under ``<job_root>/<job_id>/`` - ``job.json``, ``group.json``, ``member.json``, ``supervisor.json``,
  ``gate``, ``abort`` - never ``group.key`` (the job's secret, :data:`NEVER`);
- per rank ``<run_dir>/device_<rank>/``: ``state.json``, ``env.log`` (scrubbed, :func:`scrub_env`), ``error.json``,
  ``train.log``; per node runner ``node_<n>/`` its ``state.json``, ``env.log`` (scrubbed) and ``launcher.log``; the job's
  ``rank_table.json``;
- the plogs (and device logs, ``device-<pid>_*.log``) in the directories the ranks' ``env.log`` names
  (``_job.plog.plog_dirs``) whose last change falls in the job's window (its first stage to its last end, widened by
  ``margin`` seconds; a job still running ends now);
- device logs through ``msnpureport`` where installed (``<driver>/driver/tools/msnpureport``, or on PATH): run with no
  option in an empty directory, it writes the device's logs into a subdirectory named by the time (CANN's *msnpureport
  tool* page, log reference); the tool exports everything it holds (it has no time window);
- ``npu-smi info``, ``npu-smi info -t health -i <id>`` and ``-t board -i <id>`` for every NPU ``npu-smi info -l``
  lists; ``hccn_tool -i <device> -link -g``, ``-net_health -g``, ``-ip -g``, ``-tls -g`` for each device of the job;
- the version files (``_npu.versions``: the driver's and firmware's ``version.info``, the CANN install files,
  ``/etc/ascend_install.info``);
- the kernel's ring buffer lines of the window (``dmesg --time-format=iso``).

Everything goes into one ``tar.gz`` on the server (mode 0600) with ``manifest.json``: what was collected from where,
what failed and why, what the size cap dropped or cut (:class:`Budget`: items in the order above; a log that no longer
fits keeps its tail while at least :data:`MIN_TAIL` bytes are left, anything else is dropped), which variables were
scrubbed. Nothing is changed on the server but the archive, which the playbook fetches and removes.

On the controller (``_collect.bundle``, module ``support_bundle`` run there), the servers' archives and what the run
knows of each - unreachable, failed - become one ``tar.gz`` with the bundle's ``manifest.json``.

Runs on target hosts: Python 3.8+, stdlib only.
"""

from __future__ import annotations

import glob
import io
import json
import os
import re
import shutil
import tarfile
import tempfile
import time
from typing import Callable

from ansible_collections.ascend.cluster.plugins.module_utils import _command as command
from ansible_collections.ascend.cluster.plugins.module_utils._hccn.tool import DEFAULT_PATH as HCCN_TOOL
from ansible_collections.ascend.cluster.plugins.module_utils._job import control, files, plog
from ansible_collections.ascend.cluster.plugins.module_utils._npu import versions

# Never collected: the job's group secret.
NEVER = (files.SECRET_FILE,)
# Variable names that look secret: any of these words in the name (split at '_'), or these substrings.
SECRET_WORDS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "PWD", "CREDENTIAL", "CREDENTIALS", "AUTH", "COOKIE", "PRIVATE")
SECRET_PARTS = ("TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "APIKEY", "ACCESSKEY", "PRIVATEKEY")
# PWD is the shell's working directory, not a password.
NOT_SECRET = ("PWD", "OLDPWD")
SCRUBBED = "***scrubbed***"
MIN_TAIL = 4096
DEFAULT_MAX_BYTES = 200 * 1024 * 1024
_WORD = re.compile(r"[A-Za-z0-9]+")
# dmesg --time-format=iso: "2026-11-23T10:15:00,123456+00:00 text"
_DMESG_TIME = re.compile(r"^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})[,.]\d+([+-]\d{2}):?(\d{2})\s")


def secret_name(name: str) -> bool:
    """Whether an environment variable's name looks like it holds a secret (``HF_TOKEN``, ``AWS_SECRET_ACCESS_KEY``,
    ``WANDB_API_KEY``, ``PGPASSWORD``, ``GITHUB_AUTH``; not ``PWD`` or ``KEYBOARD_LAYOUT``' s word ``KEYBOARD``)."""
    upper = str(name).upper()
    if upper in NOT_SECRET:
        return False
    words = _WORD.findall(upper)
    return any(w in SECRET_WORDS for w in words) or any(part in upper.replace("_", "") for part in SECRET_PARTS)


def scrub_env(text: str) -> tuple[str, list]:
    """``env.log`` text with the value of every variable :func:`secret_name` picks replaced by :data:`SCRUBBED`, and
    their names (a line without ``=`` is kept as it is)."""
    out, names = [], []
    for line in text.splitlines(True):
        key, sep, _value = line.partition("=")
        if sep and key and secret_name(key):
            names.append(key)
            out.append("%s=%s%s" % (key, SCRUBBED, "\n" if line.endswith("\n") else ""))
        else:
            out.append(line)
    return "".join(out), names


class Budget:
    """The size cap of one server's part: items are taken in order while they fit; a log that does not fit keeps its
    tail while at least :data:`MIN_TAIL` bytes are left; the rest is dropped, and the manifest says so."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = int(max_bytes)
        self.used = 0

    def take(self, data: bytes, tail_ok: bool) -> tuple[bytes | None, bool]:
        """``(what to keep, truncated)``; ``(None, False)`` when the item is dropped."""
        left = self.max_bytes - self.used
        if len(data) <= left:
            self.used += len(data)
            return data, False
        if tail_ok and left >= MIN_TAIL:
            self.used += left
            return data[-left:], True
        return None, False


class Part:
    """One server's part of the bundle: the archive being written and its manifest."""

    def __init__(self, path: str, max_bytes: int) -> None:
        self.path = path
        self.budget = Budget(max_bytes)
        self.manifest: dict = {"collected": [], "failed": [], "dropped": [], "scrubbed": [], "max_bytes": int(max_bytes)}
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        self.tar = tarfile.open(fileobj=os.fdopen(self._fd, "wb"), mode="w:gz")

    def add(self, name: str, source: str, data: bytes, tail_ok: bool = False, scrubbed: list | None = None) -> None:
        kept, truncated = self.budget.take(data, tail_ok)
        if kept is None:
            self.manifest["dropped"].append({"path": name, "source": source, "bytes": len(data), "why": "size cap"})
            return
        info = tarfile.TarInfo(name)
        info.size, info.mode, info.mtime = len(kept), 0o600, int(time.time())
        self.tar.addfile(info, io.BytesIO(kept))
        entry: dict = {"path": name, "source": source, "bytes": len(kept)}
        if truncated:
            entry.update(truncated=True, original_bytes=len(data))
        if scrubbed:
            entry["scrubbed"] = scrubbed
            self.manifest["scrubbed"] += ["%s: %s" % (source, n) for n in scrubbed]
        self.manifest["collected"].append(entry)

    def fail(self, what: str, why: str) -> None:
        self.manifest["failed"].append({"what": what, "why": why})

    def add_file(self, name: str, path: str, tail_ok: bool = False, env_log: bool = False, missing_ok: bool = True) -> None:
        if os.path.basename(path) in NEVER:
            return
        try:
            with open(path, "rb") as handle:
                data = handle.read()
        except FileNotFoundError:
            if not missing_ok:
                self.fail(path, "not found")
            return
        except OSError as exc:
            self.fail(path, "cannot be read: %s" % exc)
            return
        names: list = []
        if env_log:
            text, names = scrub_env(data.decode("utf-8", "replace"))
            data = text.encode("utf-8")
        self.add(name, path, data, tail_ok=tail_ok, scrubbed=names)

    def add_command(self, name: str, argv: list, timeout: float) -> str | None:
        """Run ``argv``, keep its output as ``name``; its stdout, None when it failed (recorded)."""
        shown = " ".join(str(a) for a in argv)
        try:
            rc, out, err = command.run([str(a) for a in argv], timeout=timeout)
        except OSError as exc:
            self.fail(shown, "cannot be run: %s" % exc)
            return None
        text = out + (("\n--- stderr ---\n" + err) if err.strip() else "")
        self.add(name, shown, text.encode("utf-8"), tail_ok=True)
        if rc != 0:
            said = (err.strip() or out.strip()).splitlines()
            self.fail(shown, "exit %d%s" % (rc, ": " + said[-1][:300] if said else ""))
            return None
        return out

    def close(self, extra: dict) -> dict:
        self.manifest.update(extra, bytes=self.budget.used)
        data = (json.dumps(self.manifest, indent=2, sort_keys=True) + "\n").encode("utf-8")
        info = tarfile.TarInfo("manifest.json")
        info.size, info.mode, info.mtime = len(data), 0o600, int(time.time())
        self.tar.addfile(info, io.BytesIO(data))  # the manifest is never capped: it says what was
        fileobj = self.tar.fileobj
        self.tar.close()
        if fileobj is not None:
            fileobj.close()
        return self.manifest


def job_window(job: dict, states: list, now: float, margin: float) -> tuple[float, float]:
    """``(start, end)`` of the job in the server's clock: its first ``staged_at`` / ``started`` to its last ``ended``
    (now while a rank has not ended), widened by ``margin`` seconds."""
    starts = [s.get(k) for s in states for k in ("staged_at", "started") if isinstance(s.get(k), (int, float))]
    ends = [s.get("ended") for s in states if isinstance(s.get("ended"), (int, float))]
    start = min(starts) if starts else now
    end = now if not ends or len(ends) < len(states) else max(ends)
    return start - margin, end + margin


def in_window(path: str, window: tuple) -> bool:
    try:
        mtime = os.path.getmtime(path)
    except OSError:
        return False
    return window[0] <= mtime <= window[1]


def dmesg_lines(text: str, window: tuple) -> list:
    """The lines of ``dmesg --time-format=iso`` whose time is in ``window`` (epoch seconds)."""
    import calendar

    kept = []
    for line in text.splitlines():
        found = _DMESG_TIME.match(line)
        if not found:
            continue
        stamp = calendar.timegm(time.strptime(found.group(1), "%Y-%m-%dT%H:%M:%S"))
        sign = -1 if found.group(2).startswith("-") else 1
        offset = sign * (abs(int(found.group(2))) * 3600 + int(found.group(3)) * 60)
        if window[0] <= stamp - offset <= window[1]:
            kept.append(line)
    return kept


def msnpureport_path(explicit: str | None, which: Callable[[str], str | None] = shutil.which) -> str | None:
    """Where ``msnpureport`` is: ``explicit``, else ``<driver install dir>/driver/tools/msnpureport`` (CANN's page: the
    tool is in the driver's install directory; ``/etc/ascend_install.info`` names it, default /usr/local/Ascend), else
    on PATH; None when none is there."""
    if explicit:
        return explicit if os.path.isfile(explicit) and os.access(explicit, os.X_OK) else None
    base = versions.install_paths().get("driver") or versions.ROOT_DIR
    for path in (os.path.join(base, "driver", "tools", "msnpureport"), os.path.join(base, "tools", "msnpureport")):
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    return which("msnpureport")


def collect(p: dict, which: Callable[[str], str | None] = shutil.which) -> dict:
    """One server's part (module ``support_files``): ``{"archive", "manifest", "job_id"}``; the archive is written
    under ``p["tmp_dir"]`` (mode 0600)."""
    job = control.load_job(p["job_root"], p["job_id"])
    job_id = job["job_id"]
    tmp = tempfile.mkdtemp(prefix="ascend-support-", dir=p.get("tmp_dir") or None)
    os.chmod(tmp, 0o700)
    part = Part(os.path.join(tmp, "part.tar.gz"), p["max_bytes"])
    now = time.time()
    run_dir = job.get("run_dir") or ""
    states, envs = [], []
    for rank in job.get("ranks") or []:
        rdir = files.rank_dir(run_dir, rank["rank_id"])
        state = files.read_json(os.path.join(rdir, files.STATE_FILE))
        states.append(state if isinstance(state, dict) else {})
        envs.append(plog.read_env_log(os.path.join(rdir, files.ENV_LOG)))
    window = job_window(job, states, now, float(p["margin"]))
    # 1. the job's record and its group's view (never its secret)
    jdir = files.job_dir(p["job_root"], job_id)
    for name in sorted(os.listdir(jdir)) if os.path.isdir(jdir) else []:
        path = os.path.join(jdir, name)
        if name not in NEVER and not name.startswith(".") and os.path.isfile(path):
            part.add_file("job/%s" % name, path)
    part.add_file("run/%s" % files.RANK_TABLE, files.job_table_path(run_dir))
    # 2. each rank's small files, then each node runner's
    for rank in job.get("ranks") or []:
        rdir = files.rank_dir(run_dir, rank["rank_id"])
        base = "run/device_%d" % int(rank["rank_id"])
        part.add_file(base + "/" + files.STATE_FILE, os.path.join(rdir, files.STATE_FILE), missing_ok=False)
        part.add_file(base + "/" + files.ENV_LOG, os.path.join(rdir, files.ENV_LOG), env_log=True, missing_ok=False)
        part.add_file(base + "/" + files.ERROR_FILE, os.path.join(rdir, files.ERROR_FILE))
    for ndir in sorted(glob.glob(os.path.join(glob.escape(run_dir), "node_*"))) if run_dir else []:
        base = "run/" + os.path.basename(ndir)
        part.add_file(base + "/" + files.STATE_FILE, os.path.join(ndir, files.STATE_FILE))
        part.add_file(base + "/" + files.ENV_LOG, os.path.join(ndir, files.ENV_LOG), env_log=True)
        part.add_file(base + "/launcher.log", os.path.join(ndir, "launcher.log"), tail_ok=True)
    # 3. the devices, as the tools see them now
    npu_smi = p.get("npu_smi") or which("npu-smi")
    if npu_smi:
        part.add_command("npu-smi/info.txt", [npu_smi, "info"], p["timeout"])
        listing = part.add_command("npu-smi/info_-l.txt", [npu_smi, "info", "-l"], p["timeout"])
        for npu in sorted(set(int(n) for n in re.findall(r"^\s*NPU ID\s*:\s*(\d+)", listing or "", re.M))):
            part.add_command("npu-smi/health_%d.txt" % npu, [npu_smi, "info", "-t", "health", "-i", npu], p["timeout"])
            part.add_command("npu-smi/board_%d.txt" % npu, [npu_smi, "info", "-t", "board", "-i", npu], p["timeout"])
    else:
        part.fail("npu-smi", "not found (on PATH, or the npu_smi option)")
    hccn_tool = p.get("hccn_tool") or which("hccn_tool") or (HCCN_TOOL if os.access(HCCN_TOOL, os.X_OK) else None)
    devices = sorted(set(int(r["device_id"]) for r in job.get("ranks") or []))
    if hccn_tool:
        for device in devices:
            for query in ("link", "net_health", "ip", "tls"):
                part.add_command("hccn_tool/%d_%s.txt" % (device, query), [hccn_tool, "-i", device, "-" + query, "-g"], p["timeout"])
    else:
        part.fail("hccn_tool", "not found (on PATH, the driver's tools directory, or the hccn_tool option)")
    # 4. the versions the server runs
    arch = os.uname()[4]
    version_files = [versions.INSTALL_INFO, "/etc/Ascend/ascend_cann_install.info"]
    for paths in versions.package_files(p.get("cann_dir")).values():
        version_files += paths
    for base in versions.install_dirs(p.get("cann_dir")):
        version_files += versions.toolkit_files(base, arch) + versions.kernels_files(base, arch)
    for path in dict.fromkeys(version_files):
        part.add_file("versions" + path, path)
    # 5. the kernel's lines of the window
    dmesg = which("dmesg")
    if dmesg:
        try:
            rc, out, err = command.run([dmesg, "--time-format=iso"], timeout=p["timeout"])
        except OSError as exc:
            rc, out, err = 127, "", str(exc)
        if rc == 0:
            lines = dmesg_lines(out, window)
            part.add("dmesg.txt", "dmesg --time-format=iso (the job's window)", ("\n".join(lines) + "\n").encode("utf-8"), tail_ok=True)
        else:
            part.fail("dmesg --time-format=iso", "exit %d: %s" % (rc, (err or out).strip()[:300]))
    else:
        part.fail("dmesg", "not found")
    # 6. the ranks' logs, then the plogs of the window, then the device logs
    for rank in job.get("ranks") or []:
        rdir = files.rank_dir(run_dir, rank["rank_id"])
        part.add_file("run/device_%d/%s" % (int(rank["rank_id"]), files.TRAIN_LOG), os.path.join(rdir, files.TRAIN_LOG), tail_ok=True)
    seen: set = set()
    for env in envs:
        for directory in plog.plog_dirs(env, p.get("plog_dirs")):
            for path in sorted(glob.glob(os.path.join(glob.escape(directory), "*.log"))):
                real = os.path.realpath(path)
                if real in seen or not in_window(path, window):
                    continue
                seen.add(real)
                part.add_file("plog" + os.path.abspath(path), path, tail_ok=True)
    if p.get("msnpureport", True):
        tool = msnpureport_path(p.get("msnpureport_path"), which)
        if tool:
            out_dir = tempfile.mkdtemp(prefix="msnpureport-", dir=tmp)
            try:
                rc, out, err = command.run(
                    ["sh", "-c", 'cd "$1" && exec "$2"', "msnpureport", out_dir, tool], timeout=p["msnpureport_timeout"]
                )
            except OSError as exc:
                rc, out, err = 127, "", str(exc)
            part.add("msnpureport/output.txt", tool, (out + err).encode("utf-8"), tail_ok=True)
            if rc != 0:
                part.fail(tool, "exit %d: %s" % (rc, (err or out).strip()[-300:]))
            for root, _dirs, names in sorted(os.walk(out_dir)):
                for name in sorted(names):
                    path = os.path.join(root, name)
                    part.add_file("msnpureport/" + os.path.relpath(path, out_dir), path, tail_ok=True)
            shutil.rmtree(out_dir, ignore_errors=True)
        else:
            part.fail("msnpureport", "not installed (<driver>/driver/tools/msnpureport, or on PATH): no device logs")
    manifest = part.close(
        {
            "job_id": job_id,
            "window": {"start": window[0], "end": window[1], "clock": "the server's"},
            "collected_at": now,
            "never": list(NEVER),
        }
    )
    return {"archive": part.path, "manifest": manifest, "job_id": job_id}
