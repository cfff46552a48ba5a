# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Per-rank environment from a framework preset (see ascend-reference section 4).

The ``pytorch`` preset is what torchrun's elastic agent gives each worker (torch's
``torch/distributed/elastic/agent/server/local_elastic_agent.py``, ``_start_workers``; docs/launch.md, *torchrun's
environment*), so that a per-device rank looks torchelastic-launched to what checks for it (Lightning and accelerate
read ``RANK``, ``GROUP_RANK``, ``LOCAL_RANK``, ``LOCAL_WORLD_SIZE``): ``LOCAL_WORLD_SIZE`` (the server's ranks),
``GROUP_RANK`` / ``GROUP_WORLD_SIZE`` (the server's place among the job's servers - rank 0's server is 0, then by lowest
rank, as a per-node launcher numbers its nodes - and their number), ``ROLE_NAME`` (torchrun's default role,
``default``), ``ROLE_RANK`` / ``ROLE_WORLD_SIZE`` (one role: the global rank and the world size),
``TORCHELASTIC_RUN_ID`` (the job's id; the launch role gives every attempt of a restarted job its first id),
``TORCHELASTIC_MAX_RESTARTS`` / ``TORCHELASTIC_RESTART_COUNT`` (the job's restarts, 0 unless the launch role says
otherwise) and ``TORCHELASTIC_ERROR_FILE`` (``<rank dir>/error.json``: torch's ``@record`` writes the rank's exception
there; ``_job.torch_error`` reads it for the diagnosis). Not ``TORCHELASTIC_USE_AGENT_STORE``: there is no agent whose
store the ranks could join, so rank 0 serves ``MASTER_PORT`` as without torchrun.

Runs on target hosts: Python 3.8+, stdlib only.
"""

from __future__ import annotations

# Which variables each framework reads, in addition to the HCCL ones every preset gets.
PRESETS = {
    "mindspore": ("RANK_TABLE_FILE", "RANK_ID", "RANK_SIZE", "DEVICE_ID", "DEVICE_NUM"),
    "tensorflow": ("RANK_TABLE_FILE", "RANK_ID", "RANK_SIZE", "DEVICE_ID", "DEVICE_NUM", "ASCEND_DEVICE_ID"),
    "pytorch": (
        "RANK_TABLE_FILE",
        "RANK_ID",
        "RANK_SIZE",
        "DEVICE_ID",
        "MASTER_ADDR",
        "MASTER_PORT",
        "WORLD_SIZE",
        "RANK",
        "LOCAL_RANK",
        "HCCL_WHITELIST_DISABLE",
        "HCCL_IF_IP",
        "LOCAL_WORLD_SIZE",
        "GROUP_RANK",
        "GROUP_WORLD_SIZE",
        "ROLE_NAME",
        "ROLE_RANK",
        "ROLE_WORLD_SIZE",
        "TORCHELASTIC_RUN_ID",
        "TORCHELASTIC_MAX_RESTARTS",
        "TORCHELASTIC_RESTART_COUNT",
        "TORCHELASTIC_ERROR_FILE",
    ),
    "mindspore_legacy": ("MINDSPORE_HCCL_CONFIG_PATH", "RANK_ID", "RANK_SIZE", "DEVICE_ID", "DEVICE_NUM"),
}
FRAMEWORKS = tuple(sorted(PRESETS))
# AOE_MODE values a training run may be tuned with (1, subgraph tuning, is not for these chips).
AOE_MODES = (2, 4)


def aoe_env(tune_bank_path: str | None = None, aoe_mode: int | str | None = None) -> dict:
    """The AOE variables the launcher adds (reference section 5).

    ``tune_bank_path`` is ``TUNE_BANK_PATH``: the directory the gradient tuner writes
    ``<soc>_gradient_fusion.json`` into, and where a later training reads it. ``aoe_mode`` is
    ``AOE_MODE`` (2 operator tuning, 4 gradient tuning), only for the tuning run.
    """
    env = {}
    if tune_bank_path:
        env["TUNE_BANK_PATH"] = str(tune_bank_path)
    if aoe_mode is not None:
        if int(aoe_mode) not in AOE_MODES:
            raise ValueError("AOE_MODE %s is not supported; choose 2 or 4" % aoe_mode)
        env["AOE_MODE"] = str(int(aoe_mode))
    return env


def aoe_conflicts(extra: dict | None, tune_bank_path: str | None = None, aoe_mode: int | str | None = None) -> list:
    """Variables in ``extra`` that would silently replace the launcher's AOE values.

    The user's own ``TUNE_BANK_PATH`` / ``AOE_MODE`` is passed through as is when the launcher sets
    none; when the launcher sets one, the user's must be equal (else the tuner would write, or the
    training read, somewhere the launcher did not check). One message per conflict.
    """
    ours = aoe_env(tune_bank_path, aoe_mode)
    extra = extra or {}
    problems = []
    for name in sorted(ours):
        if name in extra and str(extra[name]) != ours[name]:
            problems.append(
                "%s=%s in the job's environment conflicts with %s=%s set by the launcher" % (name, extra[name], name, ours[name])
            )
    return problems


def rank_env(
    framework: str,
    rank: dict,
    connect_timeout: int,
    extra: dict | None = None,
    tune_bank_path: str | None = None,
    aoe_mode: int | None = None,
) -> dict:
    """The variables one rank gets.

    ``rank`` holds ``rank_id``, ``device_id``, ``rank_size``, ``local_rank``, ``local_count``,
    ``rank_table_path``, ``master_addr``, ``master_port`` and ``host_ip``, and for the ``pytorch`` preset may hold
    ``group_rank`` (0), ``group_world_size`` (1), ``run_id`` ("none", torchrun's default ``--rdzv-id``) and
    ``error_file`` (none: not exported, and torch only logs an exception). ``tune_bank_path`` and
    ``aoe_mode`` add ``TUNE_BANK_PATH`` / ``AOE_MODE`` (see :func:`aoe_env`). ``extra`` (the user's
    ``train_env`` and host-specific extra env) is applied last, so the operator can override any preset
    value - but not an AOE value the launcher sets (ValueError, see :func:`aoe_conflicts`).
    """
    if framework not in PRESETS:
        raise ValueError("unknown framework %r; choose one of %s" % (framework, ", ".join(FRAMEWORKS)))
    conflicts = aoe_conflicts(extra, tune_bank_path, aoe_mode)
    if conflicts:
        raise ValueError("; ".join(conflicts))
    values = {
        "RANK_TABLE_FILE": rank["rank_table_path"],
        "MINDSPORE_HCCL_CONFIG_PATH": rank["rank_table_path"],
        "RANK_ID": rank["rank_id"],
        "RANK_SIZE": rank["rank_size"],
        "DEVICE_ID": rank["device_id"],
        "DEVICE_NUM": rank["local_count"],
        "ASCEND_DEVICE_ID": rank["device_id"],
        "MASTER_ADDR": rank["master_addr"],
        "MASTER_PORT": rank["master_port"],
        "WORLD_SIZE": rank["rank_size"],
        "RANK": rank["rank_id"],
        "LOCAL_RANK": rank["local_rank"],
        "HCCL_WHITELIST_DISABLE": 1,
        "HCCL_IF_IP": rank["host_ip"],
        "LOCAL_WORLD_SIZE": rank["local_count"],
        "GROUP_RANK": rank.get("group_rank", 0),
        "GROUP_WORLD_SIZE": rank.get("group_world_size", 1),
        "ROLE_NAME": "default",
        "ROLE_RANK": rank["rank_id"],
        "ROLE_WORLD_SIZE": rank["rank_size"],
        "TORCHELASTIC_RUN_ID": rank.get("run_id") or "none",
        "TORCHELASTIC_MAX_RESTARTS": 0,
        "TORCHELASTIC_RESTART_COUNT": 0,
        "TORCHELASTIC_ERROR_FILE": rank.get("error_file") or None,
    }
    env = dict((name, str(values[name])) for name in PRESETS[framework] if values[name] is not None)
    env["HCCL_CONNECT_TIMEOUT"] = str(connect_timeout)
    env.update(aoe_env(tune_bank_path, aoe_mode))
    for name, value in (extra or {}).items():
        env[str(name)] = str(value)
    return env


# HCCL's ports (reference sections 4 and 7): the device port, and the host ports from HCCL_IF_BASE_PORT.
HCCL_DEVICE_PORT = 16666
HCCL_BASE_PORT = 60000


def job_ports(env: dict, hccl_port_count: int) -> dict:
    """``{port: what it is}`` of the TCP ports a job with environment ``env`` (a rank's ``env.log``) uses on a server.

    HCCL's device port, ``hccl_port_count`` host ports from ``HCCL_IF_BASE_PORT`` (60000 unless the job sets it; none
    when it sets ``HCCL_HOST_SOCKET_PORT_RANGE``, whose format the reference does not give, as the pre-flight does) and
    the framework's ``MASTER_PORT`` when set. A value that is not a port number is left out.
    """
    ports = {HCCL_DEVICE_PORT: "HCCL's device port"}
    base = str(env.get("HCCL_IF_BASE_PORT") or HCCL_BASE_PORT)
    if "HCCL_HOST_SOCKET_PORT_RANGE" not in env and base.isdigit():
        given = "HCCL_IF_BASE_PORT=%s" % base if env.get("HCCL_IF_BASE_PORT") else "HCCL_IF_BASE_PORT unset: 60000"
        for port in range(int(base), min(int(base) + int(hccl_port_count), 65536)):
            ports.setdefault(port, "HCCL's host ports (%s)" % given)
    master = str(env.get("MASTER_PORT") or "")
    if master.isdigit() and 0 < int(master) < 65536:
        ports.setdefault(int(master), "the master port (MASTER_PORT)")
    return ports
