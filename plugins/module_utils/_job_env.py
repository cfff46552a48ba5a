# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Per-rank environment from a framework preset (see ascend-reference section 4).

Runs on target hosts: Python 3.8+, stdlib only.
"""

from __future__ import annotations

__metaclass__ = type

# Which variables each framework reads, in addition to the HCCL ones every preset gets.
PRESETS = {
    "mindspore": ("RANK_TABLE_FILE", "RANK_ID", "RANK_SIZE", "DEVICE_ID", "DEVICE_NUM"),
    "tensorflow": ("RANK_TABLE_FILE", "RANK_ID", "RANK_SIZE", "DEVICE_ID", "DEVICE_NUM", "ASCEND_DEVICE_ID"),
    "pytorch": (
        "RANK_TABLE_FILE", "RANK_ID", "RANK_SIZE", "DEVICE_ID", "MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE",
        "RANK", "LOCAL_RANK", "HCCL_WHITELIST_DISABLE", "HCCL_IF_IP",
    ),
    "mindspore_legacy": ("MINDSPORE_HCCL_CONFIG_PATH", "RANK_ID", "RANK_SIZE", "DEVICE_ID", "DEVICE_NUM"),
}
FRAMEWORKS = tuple(sorted(PRESETS))


def rank_env(framework, rank, connect_timeout, extra=None):
    # type: (str, dict, int, dict | None) -> dict
    """The variables one rank gets.

    ``rank`` holds ``rank_id``, ``device_id``, ``rank_size``, ``local_rank``, ``local_count``,
    ``rank_table_path``, ``master_addr``, ``master_port`` and ``host_ip``. ``extra`` (the user's
    ``train_env`` and host-specific extra env) is applied last, so the operator can override any preset value.
    """
    if framework not in PRESETS:
        raise ValueError("unknown framework %r; choose one of %s" % (framework, ", ".join(FRAMEWORKS)))
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
    }
    env = dict((name, str(values[name])) for name in PRESETS[framework])
    env["HCCL_CONNECT_TIMEOUT"] = str(connect_timeout)
    for name, value in (extra or {}).items():
        env[str(name)] = str(value)
    return env
