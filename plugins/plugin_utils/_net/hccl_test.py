# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""CANN's HCCL performance tester (``hccl_test``) for the smoke check's real-hardware collective stage.

What it runs and how it reads the result come from the HCCL Test guide (CANN docs, "HCCL性能测试工具", pages
``devaids/hccltool/HCCLpertest_16_0004`` 工具执行, ``_0005`` 参数说明, ``_0006`` 结果说明, ``_0012`` the "retcode: 7"
error; docs/smoke.md cites them with their addresses):

- The tool ships under the CANN toolkit's ``tools/hccl_test`` (``${INSTALL_DIR}``: ``/usr/local/Ascend/ascend-toolkit/latest``,
  from CANN 8.5 ``/usr/local/Ascend/cann``), one executable per collective, here ``./bin/all_reduce_test``, run from that
  directory.
- It is started by MPI, never one process per device with a rank table: MPICH
  ``mpirun [-f <hostfile>] -n <number> ./bin/all_reduce_test -p <npus> -b <minbytes> -e <maxbytes> -f <incfactor> -d
  <datatype> -o <operator>``; Open MPI ``mpirun [-hostfile <hostfile>] -n <number> -x <env> [--allow-run-as-root]
  ./bin/...``. ``-n`` is the NPUs of all servers, ``-p`` those of one server; the hostfile lists ``<ip>:<processes>``
  (MPICH) or ``<name> slots=<processes>`` (Open MPI) per server and is left out on a single server. The environment:
  ``LD_LIBRARY_PATH=<mpi>/lib:${INSTALL_DIR}/lib64:...``, ``HCCL_TEST_USE_DEVS="4,5,6,7"`` picks the devices.
- Result (rank 0 prints it): a header naming ``data_size`` (bytes per NPU), ``aveg_time`` (us; the guide's text
  example spells it ``avg_time``), ``alg_bandwidth`` (GB/s: the *algorithm* bandwidth, data size / time) and
  ``check_result`` (``success``, ``failed``, or ``NULL`` when the check is off or would overflow), then one
  ``|``-separated row per data size. The tool prints no bus bandwidth, so none is derived here.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence
from typing import Any

from ansible_collections.ascend.cluster.plugins.plugin_utils._errors import ClusterSpecError

BINARY = "all_reduce_test"
# ${INSTALL_DIR} under the CANN base directory (ascend_cann_dir, default /usr/local/Ascend): older toolkits, then CANN 8.5+.
INSTALL_DIRS = ("ascend-toolkit/latest", "cann")
TOOL_DIR = "tools/hccl_test"
MPI_KINDS = ("mpich", "openmpi")
MODES = ("auto", "hccl_test", "standin")
CHECK_RESULTS = ("success", "failed", "NULL")
# What the guide's example runs: fp32 sum, data sizes growing by a factor of 2 from 8K to the size asked for.
DATA_TYPE, OPERATOR, MIN_BYTES, FACTOR = "fp32", "sum", "8K", "2"
DEVICES_VAR = "HCCL_TEST_USE_DEVS"
TIMEOUT_EXIT = 124  # coreutils timeout's exit status when it stopped the command

# Sources the CANN set_env.sh when present, puts MPI on the paths (the guide's step 1), then runs the argv from the
# tool's directory. Arguments: set_env, mpi_home (may be empty), install_dir, then the argv.
WRAPPER = (
    'set_env=$1 mpi_home=$2 install_dir=$3; shift 3; if [ -f "$set_env" ]; then . "$set_env"; fi; '
    'LD_LIBRARY_PATH="$install_dir/lib64:$LD_LIBRARY_PATH"; '
    'if [ -n "$mpi_home" ]; then PATH="$mpi_home/bin:$PATH"; LD_LIBRARY_PATH="$mpi_home/lib:$LD_LIBRARY_PATH"; fi; '
    'export PATH LD_LIBRARY_PATH; cd "$install_dir/tools/hccl_test" && exec "$@"'
)


def binary_paths(cann_dir: str = "") -> list[str]:
    """Where ``all_reduce_test`` is looked for, in order, under the CANN base directory (default /usr/local/Ascend)."""
    base = (cann_dir or "/usr/local/Ascend").rstrip("/")
    return [f"{base}/{sub}/{TOOL_DIR}/bin/{BINARY}" for sub in INSTALL_DIRS]


def install_dir(binary: str) -> str:
    """``${INSTALL_DIR}`` of a found ``.../tools/hccl_test/bin/all_reduce_test``."""
    suffix = f"/{TOOL_DIR}/bin/{BINARY}"
    if not str(binary).endswith(suffix):
        raise ClusterSpecError(f"{binary!r} is not a path ending in {suffix}")
    return str(binary)[: -len(suffix)]


def hostfile(servers: Sequence[tuple[str, int]], mpi: str) -> str:
    """The hostfile: one line per server, ``<ip>:<processes>`` (MPICH) or ``<ip> slots=<processes>`` (Open MPI)."""
    _check_mpi(mpi)
    line = "{}:{}" if mpi == "mpich" else "{} slots={}"
    return "".join(line.format(server, int(count)) + "\n" for server, count in servers)


def _check_mpi(mpi: str) -> None:
    if mpi not in MPI_KINDS:
        raise ClusterSpecError(f"the MPI must be one of {', '.join(MPI_KINDS)}, got {mpi!r}")


def command(
    *,
    np: int,
    per_server: int,
    size_mb: int,
    mpi: str = "mpich",
    hostfile_path: str | None = None,
    env_names: Sequence[str] = (),
) -> list[str]:
    """The ``mpirun ... ./bin/all_reduce_test ...`` argv (run from ``${INSTALL_DIR}/tools/hccl_test``).

    ``np``: NPUs of all servers (``-n``); ``per_server``: NPUs of one server (``-p``); ``size_mb``: the largest data
    size per NPU (``-e <size>M``; from 8K by a factor of 2, fp32 sum, as the guide's example); ``hostfile_path``:
    with several servers; ``env_names``: the variables Open MPI must pass on to the other servers (``-x``; MPICH
    passes the caller's environment itself).
    """
    _check_mpi(mpi)
    if int(np) < 1 or int(per_server) < 1 or int(np) % int(per_server):
        raise ClusterSpecError(f"-n {np} must be a multiple of -p {per_server} (every server runs the same number of NPUs)")
    if int(size_mb) < 1:
        raise ClusterSpecError(f"the data size must be at least 1 MiB, got {size_mb}")
    argv = ["mpirun"]
    if mpi == "mpich":
        argv += ["-f", hostfile_path] if hostfile_path else []
        argv += ["-n", str(int(np))]
    else:
        argv += ["-hostfile", hostfile_path] if hostfile_path else []
        argv += ["-n", str(int(np))]
        for name in ("LD_LIBRARY_PATH", *env_names):
            argv += ["-x", name]
        argv += ["--allow-run-as-root"]
    argv += [f"./bin/{BINARY}", "-p", str(int(per_server)), "-b", MIN_BYTES, "-e", f"{int(size_mb)}M", "-f", FACTOR]
    return argv + ["-d", DATA_TYPE, "-o", OPERATOR]


def wrapped(argv: Sequence[str], *, install: str, set_env: str = "", mpi_home: str = "") -> list[str]:
    """``argv`` run through :data:`WRAPPER`: set_env.sh sourced when present, MPI and the toolkit on the paths."""
    return ["bash", "-c", WRAPPER, "ascend-hccl-test", set_env or "", mpi_home or "", install, *argv]


def _devices(server: Mapping[str, Any]) -> list[int]:
    return sorted(int(d["device_id"]) for d in server.get("devices") or [])


def plan(
    job_servers: Sequence[Mapping[str, Any]],
    host: str,
    *,
    binary: str,
    size_mb: int,
    mpi: str = "mpich",
    mpi_home: str = "",
    set_env: str = "",
    hostfile_path: str = "",
    rank0_server: str | None = None,
    extra_env: Mapping[str, Any] | None = None,
    timeout_s: int = 0,
) -> dict[str, Any]:
    """What ``host`` runs: ``{server, cluster}``.

    ``server``: this server's NPUs of the job alone (``{argv, environment, command, devices}``), None when the host
    has none. ``cluster``: on rank 0's server only, with several servers, every NPU of the job over the hostfile
    (``{argv, environment, command, hostfile, hostfile_path, np}``), or ``{refused: why}`` when the servers' NPUs differ (``-p`` and
    ``HCCL_TEST_USE_DEVS`` are one value for every server); None elsewhere. ``job_servers``: the rank_table role's
    ``ascend_job_servers`` (``[{server_id, host, devices: [{device_id}]}]``), ``binary``: the found all_reduce_test;
    ``timeout_s``: each run is stopped after so many seconds by coreutils ``timeout`` (exit 124; 0: never).
    """
    if isinstance(job_servers, (str, Mapping)) or not isinstance(job_servers, Sequence):
        raise ClusterSpecError("the input must be the job's servers ([{server_id, host, devices}])")
    install = install_dir(binary)
    extra = {str(k): str(v) for k, v in (extra_env or {}).items()}
    servers = [dict(s) for s in job_servers]
    mine = next((s for s in servers if s.get("host") == host), None)
    result: dict[str, Any] = {"server": None, "cluster": None}
    if mine is not None and _devices(mine):
        devices = _devices(mine)
        env = dict(extra, **{DEVICES_VAR: ",".join(str(d) for d in devices)})
        argv = command(np=len(devices), per_server=len(devices), size_mb=size_mb, mpi=mpi, env_names=[DEVICES_VAR, *extra])
        result["server"] = _run(argv, env, install, set_env, mpi_home, devices=devices, timeout_s=timeout_s)
    rank0 = rank0_server if rank0_server is not None else (servers[0].get("server_id") if servers else None)
    if mine is None or len(servers) < 2 or mine.get("server_id") != rank0:
        return result
    device_sets = {str(s["server_id"]): _devices(s) for s in servers}
    if len({tuple(d) for d in device_sets.values()}) > 1:
        shown = "; ".join(f"{server}: {_span(devices)}" for server, devices in device_sets.items())
        result["cluster"] = {
            "refused": f"hccl_test runs the same NPUs on every server ({DEVICES_VAR} and -p are one value for all), and "
            f"this job's differ ({shown}): smoke-check an np that gives every server the same devices"
        }
        return result
    devices = _devices(mine)
    np = len(devices) * len(servers)
    env = dict(extra, **{DEVICES_VAR: ",".join(str(d) for d in devices)})
    argv = command(np=np, per_server=len(devices), size_mb=size_mb, mpi=mpi, hostfile_path=hostfile_path, env_names=[DEVICES_VAR, *extra])
    run = _run(argv, env, install, set_env, mpi_home, devices=devices, timeout_s=timeout_s)
    # rank 0's server first: MPI numbers the ranks in the hostfile's order
    ordered = [mine] + [s for s in servers if s is not mine]
    run.update(np=np, hostfile=hostfile([(str(s["server_id"]), len(devices)) for s in ordered], mpi), hostfile_path=hostfile_path)
    result["cluster"] = run
    return result


def _run(
    argv: list[str], env: dict[str, str], install: str, set_env: str, mpi_home: str, *, devices: list[int], timeout_s: int = 0
) -> dict[str, Any]:
    shown = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
    # SIGTERM after timeout_s (mpirun passes it to its ranks), SIGKILL 30 s later
    bounded = ["timeout", "--kill-after=30", str(int(timeout_s)), *argv] if int(timeout_s or 0) > 0 else list(argv)
    return {
        "argv": wrapped(bounded, install=install, set_env=set_env, mpi_home=mpi_home),
        "environment": env,
        "command": f"cd {shlex.quote(install + '/' + TOOL_DIR)} && {shown} {' '.join(shlex.quote(a) for a in argv)}",
        "devices": devices,
        "timeout_s": int(timeout_s or 0),
    }


def _span(devices: Sequence[int]) -> str:
    return ",".join(str(d) for d in devices) or "none"


# --------------------------------------------------------------------------- the result table

_HEADER = re.compile(r"^\s*data_size\b[^|]*\|\s*a?v[e]?g_time\b[^|]*\|\s*alg_bandwidth\b[^|]*\|\s*check_result\b", re.I)
_ROW = re.compile(r"^\s*(\d+)\s*\|\s*([0-9.]+(?:[eE][-+]?\d+)?)\s*\|\s*([0-9.]+(?:[eE][-+]?\d+)?)\s*\|\s*(\w+)\s*$")
# What the tool prints when HCCL refuses a call (the guide's "retcode: 7" page): "hccl interface return err <file>:<line>,
# retcode: 7" then "This is an error in init_hcclComm."
_ERROR = re.compile(r"hccl interface return err.*retcode:\s*(\d+)|This is an error in \w+", re.I)


def parse(text: Any) -> dict[str, Any]:
    """``{rows, errors}`` of hccl_test's output.

    ``rows``: ``[{data_size, avg_time_us, alg_bandwidth_gbps, check_result}]``, one per row after the header (a row
    before any header is not the table's); ``errors``: the lines where HCCL refused a call. A table cut short keeps
    the rows read so far.
    """
    rows: list[dict[str, Any]] = []
    errors: list[str] = []
    in_table = False
    for line in str(text or "").splitlines():
        if _HEADER.match(line):
            in_table = True
            continue
        if _ERROR.search(line):
            errors.append(line.strip())
            continue
        match = _ROW.match(line) if in_table else None
        if match and match.group(4) in CHECK_RESULTS:
            rows.append(
                {
                    "data_size": int(match.group(1)),
                    "avg_time_us": float(match.group(2)),
                    "alg_bandwidth_gbps": float(match.group(3)),
                    "check_result": match.group(4),
                }
            )
    return {"rows": rows, "errors": errors}


def verdict(run: Mapping[str, Any], min_gbps: float = 0.0) -> tuple[bool, str, float | None]:
    """``(ok, detail, GB/s)`` of one run (``{rc, stdout, stderr, np, devices}``, as the role registered it).

    The figure is ``alg_bandwidth`` at the largest data size. It fails on a non-zero exit, no result row, a
    ``failed`` check at any size, or a figure below ``min_gbps`` (0: no floor).
    """
    if run.get("refused"):
        return False, str(run["refused"]), None
    if run.get("msg") and run.get("rc") is None:
        return False, f"hccl_test failed: {run['msg']}", None
    result = parse(run.get("stdout"))
    rows = result["rows"]
    where = f"all_reduce_test on {run.get('np') or len(run.get('devices') or [])} NPU(s)"
    if int(run.get("rc") or 0) != 0 or not rows:
        tail = [line for line in f"{run.get('stdout') or ''}\n{run.get('stderr') or ''}".splitlines() if line.strip()]
        why = result["errors"][:2] or tail[-3:] or ["no output"]
        status = f"exit {run.get('rc')}" if int(run.get("rc") or 0) != 0 else "no result table"
        if int(run.get("rc") or 0) == TIMEOUT_EXIT and run.get("timeout_s"):
            status = f"stopped after {run['timeout_s']} s (ascend_smoke_hccl_test_timeout), exit {TIMEOUT_EXIT}"
        return False, f"{where}: {status}: {' / '.join(why)}", None
    failed = [r["data_size"] for r in rows if r["check_result"] == "failed"]
    top = max(rows, key=lambda r: r["data_size"])
    gbps = top["alg_bandwidth_gbps"]
    detail = (
        f"{where}: {gbps:.2f} GB/s alg_bandwidth at {top['data_size']} bytes, avg {top['avg_time_us']:.2f} us, check {top['check_result']}"
    )
    if failed:
        return False, f"{detail}; check_result failed at {', '.join(str(s) for s in failed)} bytes (wrong sums)", gbps
    if gbps < float(min_gbps or 0):
        floor = float(min_gbps)
        return False, f"{detail}, below the floor of {int(floor) if floor.is_integer() else floor} GB/s", gbps
    return True, detail, gbps


# --------------------------------------------------------------------------- which collective check runs


def choose_mode(
    requested: str,
    found: Mapping[str, Any],
    looked_for: Sequence[str] = (),
    unbound: Mapping[str, Sequence[str]] | None = None,
) -> dict[str, Any]:
    """``{mode, error}``: the collective check the smoke run makes (``hccl_test`` or ``standin``), or why none.

    ``requested``: ``auto`` (hccl_test where every server of the job has it, else refused, naming the stand-in),
    ``hccl_test`` or ``standin``; ``found``: per job server, the ``all_reduce_test`` found there (empty: none);
    ``looked_for``: where it was looked for; ``unbound``: per server, the job's device IPs that are not addresses of
    that server (the stand-in binds them; a real server keeps them on the NPU, the simulated cluster nowhere).
    """
    if requested not in MODES:
        raise ClusterSpecError(f"the collective mode must be one of {', '.join(MODES)}, got {requested!r}")
    missing = sorted(str(host) for host, path in found.items() if not path)
    paths = " or ".join(looked_for) or "the CANN toolkit's tools/hccl_test/bin"
    if requested == "standin":
        bad = {str(host): list(ips) for host, ips in (unbound or {}).items() if ips}
        if not bad:
            return {"mode": "standin", "error": None}
        shown = "; ".join(f"{host}: {', '.join(ips)}" for host, ips in sorted(bad.items()))
        return {
            "mode": "standin",
            "error": "the HCCL stand-in (a test-bed tool) binds each rank's device IP on its server, and these device IPs are "
            f"not addresses of their servers ({shown}): on real NPUs the device IP lives on the NPU, so run CANN's "
            "hccl_test (-e collective_mode=hccl_test); the simulated cluster's device IPs are on no interface, so no "
            "collective check runs there",
        }
    if not missing:
        return {"mode": "hccl_test", "error": None}
    where = f"{', '.join(missing)} (looked for {paths})"
    if requested == "hccl_test":
        return {
            "mode": "hccl_test",
            "error": f"collective_mode=hccl_test: CANN's hccl_test (all_reduce_test) is not installed on {where}: build it "
            "under the CANN toolkit's tools/hccl_test (the HCCL Test guide), or point ascend_cann_dir at the CANN install",
        }
    return {
        "mode": "hccl_test",
        "error": f"collective_mode=auto: CANN's hccl_test (all_reduce_test) is not installed on {where}, so no real-hardware "
        "collective check can run: build it under the CANN toolkit's tools/hccl_test (the HCCL Test guide); on a test bed, "
        "where each device IP is a host interface, run the HCCL stand-in instead: -e collective_mode=standin",
    }
