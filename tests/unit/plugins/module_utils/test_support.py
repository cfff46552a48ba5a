"""module_utils._collect.files: the support bundle's scrubbing, size cap and manifests (ascend.cluster.collect).

A job recorded as the launch records it, fake npu-smi / hccn_tool / dmesg / msnpureport on a PATH of their own: one
server's part gathered, then the bundle made with a second server that could not be reached.
"""

from __future__ import annotations

import json
import os
import tarfile
import time
from pathlib import Path

import pytest

from ansible_collections.ascend.cluster.plugins.module_utils._collect import bundle as bundling
from ansible_collections.ascend.cluster.plugins.module_utils._collect import files as support
from ansible_collections.ascend.cluster.plugins.module_utils._job import control, files


@pytest.mark.parametrize(
    "name, secret",
    [
        ("HF_TOKEN", True),
        ("AWS_SECRET_ACCESS_KEY", True),
        ("WANDB_API_KEY", True),
        ("PGPASSWORD", True),
        ("MLFLOW_TRACKING_PASSWORD", True),
        ("GITHUB_AUTH", True),
        ("SSH_PRIVATE", True),
        ("OPENAI_APIKEY", True),
        ("AZURE_CREDENTIALS", True),
        ("PWD", False),
        ("OLDPWD", False),
        ("KEYBOARD_LAYOUT", False),
        ("MONKEY_PATCH", False),
        ("HCCL_IF_IP", False),
        ("RANK_TABLE_FILE", False),
        ("TORCHELASTIC_ERROR_FILE", False),
    ],
)
def test_which_names_look_secret(name, secret):
    assert support.secret_name(name) is secret


def test_env_log_values_of_secret_names_are_scrubbed_the_rest_kept_byte_for_byte():
    text = "HOME=/root\nHF_TOKEN=hf_abc=def\nnot a pair\nWANDB_API_KEY=k\nRANK_ID=3"
    scrubbed, names = support.scrub_env(text)
    assert scrubbed == "HOME=/root\nHF_TOKEN=***scrubbed***\nnot a pair\nWANDB_API_KEY=***scrubbed***\nRANK_ID=3"
    assert names == ["HF_TOKEN", "WANDB_API_KEY"]


def test_the_cap_takes_items_in_order_cuts_a_log_to_its_tail_and_drops_the_rest():
    budget = support.Budget(10000)
    assert budget.take(b"a" * 4000, tail_ok=False) == (b"a" * 4000, False)
    assert budget.take(b"x" * 7000, tail_ok=False) == (None, False)  # not a log: dropped whole
    kept, truncated = budget.take(b"0123456789" * 800, tail_ok=True)  # a log: its last 6000 bytes
    assert kept is not None and truncated and len(kept) == 6000 and kept.endswith(b"789")
    assert budget.take(b"y", tail_ok=True) == (None, False) and budget.used == 10000
    assert support.Budget(3000).take(b"z" * 5000, tail_ok=True) == (None, False)  # under MIN_TAIL left: dropped


def test_dmesg_lines_of_the_window_in_any_zone():
    start = 1795428900.0  # 2026-11-23T10:15:00Z
    text = "\n".join(
        [
            "2026-11-23T10:14:00,000000+00:00 before",
            "2026-11-23T10:15:30,123456+00:00 in (utc)",
            "2026-11-23T18:15:40,000000+08:00 in (+08:00)",
            "2026-11-23T05:15:50,000000-05:00 in (-05:00)",
            "2026-11-23T10:20:00,000000+00:00 after",
            "garbage",
        ]
    )
    assert [line.split(" ", 1)[1] for line in support.dmesg_lines(text, (start, start + 60))] == ["in (utc)", "in (+08:00)", "in (-05:00)"]


TOOL = """#!/bin/sh
echo "$(basename "$0") $*" >> "{log}"
case "$*" in
  "info -l") printf 'Total Count                    : 2\\n\\nNPU ID                         : 0\\n\\nNPU ID                         : 1\\n' ;;
  *"-i 1 -link -g"*) echo "hccn broke" >&2; exit 4 ;;
  *) echo "output of $(basename "$0") $*" ;;
esac
"""
DMESG = """#!/bin/sh
echo "{before} before the job"
echo "{during} npu driver: device 1 heartbeat lost"
"""
MSNPUREPORT = """#!/bin/sh
mkdir -p "$(date +%Y-%m-%d-%H-%M-%S)/slog" && echo device log > "$(ls -d 20*)/slog/device-0.log"
"""


def _job(tmp_path: Path) -> tuple[dict, Path]:
    """Job j: ranks 0 and 1 (devices 0, 1) on this server, ended a minute ago, a plog of the window and one older."""
    jobs, run, home = tmp_path / "jobs", tmp_path / "run", tmp_path / "home"
    job = {"job_id": "j", "run_dir": str(run), "ranks": [{"rank_id": r, "device_id": r} for r in (0, 1)]}
    control.record_job(str(jobs), job)
    control.open_gate(str(jobs), control.load_job(str(jobs), "j"), time.time() - 120)
    (jobs / "j" / files.SECRET_FILE).write_text("the-group-secret")
    files.write_json(str(jobs / "j" / files.GROUP_FILE), {"status": "ended"})
    now = time.time()
    for rank in (0, 1):
        rdir = run / f"device_{rank}"
        rdir.mkdir(parents=True)
        files.write_json(
            str(rdir / files.STATE_FILE), {"phase": "exited", "rc": rank, "staged_at": now - 130, "started": now - 120, "ended": now - 60}
        )
        (rdir / files.ENV_LOG).write_text(f"HOME={home}\nHF_TOKEN=hf_secret_{rank}\nRANK_ID={rank}\n")
        (rdir / files.TRAIN_LOG).write_text("".join(f"rank {rank} step {i}\n" for i in range(2000)))
    (run / files.RANK_TABLE).write_text('{"version": "1.0"}\n')
    plogs = home / "ascend" / "log" / "debug" / "plog"
    plogs.mkdir(parents=True)
    (plogs / "plog-11_1.log").write_text("[ERROR] HCCL(11,python3): in the window\n")
    os.utime(plogs / "plog-11_1.log", (now - 90, now - 90))  # written while the job ran
    old = plogs / "plog-10_1.log"
    old.write_text("[ERROR] HCCL(10,python3): last week\n")
    os.utime(old, (now - 7 * 86400, now - 7 * 86400))
    return job, jobs


def _tools(tmp_path: Path) -> dict:
    bin_dir, log = tmp_path / "bin", tmp_path / "calls.log"
    bin_dir.mkdir()

    def iso(t: float) -> str:
        return time.strftime("%Y-%m-%dT%H:%M:%S,000000+00:00", time.gmtime(t))

    scripts = {
        "npu-smi": TOOL.format(log=log),
        "hccn_tool": TOOL.format(log=log),
        "dmesg": DMESG.format(before=iso(time.time() - 86400), during=iso(time.time() - 90)),
        "msnpureport": MSNPUREPORT,
    }
    for name, text in scripts.items():
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    return {name: str(bin_dir / name) for name in scripts}


def _params(jobs: Path, tmp_path: Path, **more) -> dict:
    p = {
        "job_id": "latest",
        "job_root": str(jobs),
        "max_bytes": support.DEFAULT_MAX_BYTES,
        "margin": 30.0,
        "timeout": 10,
        "msnpureport": True,
        "msnpureport_path": None,
        "msnpureport_timeout": 30,
        "plog_dirs": [],
        "cann_dir": str(tmp_path / "no-cann"),
        "tmp_dir": str(tmp_path),
        "npu_smi": None,
        "hccn_tool": None,
    }
    p.update(more)
    return p


def _members(archive: str) -> dict:
    with tarfile.open(archive) as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}  # type: ignore[union-attr]


def test_a_servers_part_holds_the_job_scrubbed_the_tools_the_window_and_a_manifest_of_it(tmp_path):
    _job_record, jobs = _job(tmp_path)
    tools = _tools(tmp_path)
    out = support.collect(_params(jobs, tmp_path), which=tools.get)
    assert out["job_id"] == "j" and oct(os.stat(out["archive"]).st_mode & 0o777) == "0o600"
    got = _members(out["archive"])
    # the job's secret never; its record and group view
    assert "job/group.key" not in got and not any(b"the-group-secret" in data for data in got.values())
    assert json.loads(got["job/group.json"]) == {"status": "ended"} and "job/job.json" in got
    # env.log scrubbed, named in the manifest; the rest of it kept
    assert got["run/device_1/env.log"].decode().splitlines()[1:] == ["HF_TOKEN=***scrubbed***", "RANK_ID=1"]
    assert not any(b"hf_secret" in data for data in got.values())
    manifest = json.loads(got["manifest.json"])
    assert manifest == out["manifest"]
    assert manifest["scrubbed"] == [f"{tmp_path}/run/device_{r}/env.log: HF_TOKEN" for r in (0, 1)]
    # npu-smi info, and health and board of every NPU it lists; hccn_tool's four reads of each device of the job
    assert {n for n in got if n.startswith("npu-smi/")} == {
        "npu-smi/info.txt",
        "npu-smi/info_-l.txt",
        *(f"npu-smi/{kind}_{npu}.txt" for kind in ("health", "board") for npu in (0, 1)),
    }
    assert got["npu-smi/board_1.txt"] == b"output of npu-smi info -t board -i 1\n"
    assert {n for n in got if n.startswith("hccn_tool/")} == {
        f"hccn_tool/{d}_{q}.txt" for d in (0, 1) for q in ("link", "net_health", "ip", "tls")
    }
    # a read that failed is named with why, and what it printed kept
    assert {"what": f"{tools['hccn_tool']} -i 1 -link -g", "why": "exit 4: hccn broke"} in manifest["failed"]
    assert got["hccn_tool/1_link.txt"] == b"\n--- stderr ---\nhccn broke\n"
    # the plog of the window, not last week's; dmesg's lines of the window; msnpureport's export; the rank logs
    plogs = [n for n in got if n.startswith("plog/")]
    assert len(plogs) == 1 and plogs[0].endswith("/plog-11_1.log")
    assert (
        got["dmesg.txt"].decode().splitlines()[0].endswith("npu driver: device 1 heartbeat lost")
        and b"before the job" not in got["dmesg.txt"]
    )
    assert [n.split("/", 2)[2] for n in got if n.startswith("msnpureport/") and n.endswith(".log")] == ["slog/device-0.log"]
    assert got["run/device_0/train.log"].endswith(b"rank 0 step 1999\n")
    # every collected file is in the manifest with where it came from
    assert sorted(e["path"] for e in manifest["collected"]) == sorted(n for n in got if n != "manifest.json")
    assert manifest["dropped"] == [] and manifest["never"] == [files.SECRET_FILE]
    assert manifest["window"]["start"] < time.time() - 120 < manifest["window"]["end"] < time.time()


def test_the_cap_cuts_the_logs_to_their_tails_and_lists_what_it_dropped(tmp_path):
    _job_record, jobs = _job(tmp_path)
    tools = _tools(tmp_path)
    out = support.collect(_params(jobs, tmp_path, max_bytes=30000, msnpureport=False), which=tools.get)
    manifest = out["manifest"]
    got = _members(out["archive"])
    assert manifest["bytes"] <= 30000 and sum(len(d) for n, d in got.items() if n != "manifest.json") == manifest["bytes"]
    cut = [e for e in manifest["collected"] if e.get("truncated")]
    assert [e["path"] for e in cut] == ["run/device_0/train.log"] and cut[0]["original_bytes"] > cut[0]["bytes"]
    dropped = {e["path"] for e in manifest["dropped"]}
    assert "run/device_1/train.log" in dropped and all(e["why"] == "size cap" and e["bytes"] > 0 for e in manifest["dropped"])
    assert "run/device_1/train.log" not in got and got["run/device_0/train.log"].endswith(b"rank 0 step 1999\n")


def test_no_tools_and_no_job_say_so(tmp_path):
    _job_record, jobs = _job(tmp_path)
    out = support.collect(_params(jobs, tmp_path), which=lambda name: None)
    failed = {f["what"]: f["why"] for f in out["manifest"]["failed"]}
    assert failed["npu-smi"].startswith("not found") and failed["dmesg"] == "not found"
    assert failed["msnpureport"].startswith("not installed")
    with pytest.raises(control.JobError, match="job nope is not recorded"):
        support.collect(_params(jobs, tmp_path, job_id="nope"), which=lambda name: None)


def test_the_bundle_names_an_unreachable_server_keeps_the_others_and_refuses_names_that_escape(tmp_path):
    _job_record, jobs = _job(tmp_path)
    part = support.collect(_params(jobs, tmp_path, msnpureport=False), which=lambda name: None)
    hostile = tmp_path / "hostile.tar.gz"
    with tarfile.open(hostile, "w:gz") as tar:
        for name in ("../../etc/evil", "ok.txt", "/abs/path.txt"):
            data = name.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, __import__("io").BytesIO(data))
    parts_dir = tmp_path / "parts"
    parts_dir.mkdir()
    os.rename(part["archive"], parts_dir / "h1.tar.gz")
    os.rename(hostile, parts_dir / "h3.tar.gz")
    (tmp_path / "summary.json").write_text('{"ok": false}\n')
    parts = {
        "h1": {"changed": True, "archive": part["archive"], "manifest": part["manifest"], "job_id": "j"},
        "h2": {"unreachable": True, "msg": "Failed to connect to the host via ssh: No route to host", "changed": False},
        "h3": {"changed": True, "archive": "/x", "manifest": {}, "job_id": "j"},
        "h4": {"failed": True, "msg": "job j is not recorded under /jobs on this host"},
    }
    fetched = {"h1": {"changed": True}, "h3": {"changed": True}}
    servers = bundling.servers_from_results(parts, fetched, str(parts_dir))
    path = tmp_path / "out" / "support-j.tar.gz"
    manifest = bundling.bundle(
        str(path), "j", servers, {"summary.json": str(tmp_path / "summary.json"), "absent.json": str(tmp_path / "x")}
    )
    assert oct(path.stat().st_mode & 0o777) == "0o600" and not list(path.parent.glob(".bundle-*"))
    got = _members(str(path))
    assert json.loads(got["support-j/manifest.json"]) == manifest
    assert manifest["unreachable"] == [
        {"host": "h2", "why": "could not be reached: Failed to connect to the host via ssh: No route to host"}
    ]
    assert manifest["failed"] == [{"host": "h4", "why": "job j is not recorded under /jobs on this host"}]
    assert manifest["servers"]["h1"]["manifest"] == part["manifest"]
    assert "support-j/h1/run/device_0/train.log" in got and "support-j/h1/manifest.json" in got
    assert got["support-j/controller/summary.json"] == b'{"ok": false}\n' and [c["path"] for c in manifest["controller"]] == [
        "controller/summary.json"
    ]
    # a member of a server's archive never lands outside that server's folder
    assert sorted(n for n in got if n.startswith("support-j/h3/")) == ["support-j/h3/abs/path.txt", "support-j/h3/ok.txt"]
    assert all(n.startswith("support-j/") and ".." not in n.split("/") for n in got)
