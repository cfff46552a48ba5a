# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Argument specs of the options several modules share, declared once.

Each dict goes with the documentation fragment named beside it (``plugins/doc_fragments/``).
``TOOL_PATHS`` is what every module of the ``ascend.cluster.ascend`` action group accepts, so that
``module_defaults`` for ``group/ascend.cluster.ascend`` can set the tool paths once for a play.
"""

from __future__ import annotations

from ansible_collections.ascend.cluster.plugins.module_utils._job.env import AOE_MODES, FRAMEWORKS

DEFAULT_HCCN_CONF = "/etc/hccn.conf"
DEFAULT_JOB_ROOT = "/var/lib/ascend-cluster/jobs"
DEFAULT_LOCK_DIR = "/run/ascend-cluster/locks"
DEFAULT_GRACE = 3.0

# ascend.cluster.tools
TOOL_PATHS = dict(
    hccn_tool=dict(type="str"),
    npu_smi=dict(type="str"),
    hccn_conf=dict(type="path", default=DEFAULT_HCCN_CONF),
)

# ascend.cluster.hccn_calls
HCCN_CALLS = dict(timeout=dict(type="int", default=30))

# ascend.cluster.jobs, ascend.cluster.jobs.lock_dir, ascend.cluster.jobs.grace
JOB_ROOT = dict(job_root=dict(type="path", default=DEFAULT_JOB_ROOT))
LOCK_DIR = dict(lock_dir=dict(type="path", default=DEFAULT_LOCK_DIR))
GRACE = dict(grace=dict(type="float", default=DEFAULT_GRACE))

# ascend.cluster.rank (training_rank, training_ranks; each adds the rank's identity)
RANK = dict(
    job_id=dict(type="str", required=True),
    run_dir=dict(type="path", required=True),
    argv=dict(type="list", elements="str"),
    command=dict(type="str"),
    framework=dict(type="str", choices=list(FRAMEWORKS), default="mindspore"),
    rank_size=dict(type="int", required=True),
    local_count=dict(type="int", required=True),
    rank_table_path=dict(type="path", required=True),
    rank_table_sha256=dict(type="str"),
    master_addr=dict(type="str", default="127.0.0.1"),
    master_port=dict(type="int", default=29500),
    host_ip=dict(type="str", default="127.0.0.1"),
    connect_timeout=dict(type="int", default=120),
    env=dict(type="dict", default={}),
    tune_bank_path=dict(type="path"),
    aoe_mode=dict(type="int", choices=list(AOE_MODES)),
    set_env=dict(type="path", default="/usr/local/Ascend/ascend-toolkit/set_env.sh"),
    umask=dict(type="str"),
    gate_timeout=dict(type="int", default=600),
    max_runtime=dict(type="int", default=604800),
    kill_grace=dict(type="float", default=DEFAULT_GRACE),
    stall_timeout=dict(type="float", default=600.0),
    progress_regex=dict(type="str", default=""),
    fail_fast=dict(type="bool", default=True),
)


def spec(*parts: dict, **own: dict) -> dict:
    """One argument spec: the shared ``parts`` (fresh copies) and then the module's ``own`` options."""
    merged: dict = {}
    for part in parts:
        for name, option in part.items():
            merged[name] = dict(option)
    merged.update(own)
    return merged


# One rank as the job's rank layout gives it (plugin_utils/_rank/layout.entries, each host's slice of rank_layout): the
# launch passes its slice as it is, so the module takes the layout's numbering instead of counting again. rank_id and
# device_id are required; local_index (LOCAL_RANK) and local_count (DEVICE_NUM) are used when given; device_ip and
# server_id are the table's, accepted and not used.
RANK_ENTRY = dict(
    rank_id=dict(type="int", required=True),
    device_id=dict(type="int", required=True),
    local_index=dict(type="int"),
    local_count=dict(type="int"),
    device_ip=dict(type="str"),
    server_id=dict(type="str"),
)


# training_watch (ascend.cluster.tools, ascend.cluster.jobs, ascend.cluster.jobs.grace and its own): its
# action plugin validates against it, and its module file declares it so that sanity checks the docs against it
WATCH = spec(
    TOOL_PATHS,
    JOB_ROOT,
    GRACE,
    job_id=dict(type="str", required=True),
    controller_dir=dict(type="path", required=True),
    coordinator=dict(type="str", required=True),
    servers=dict(type="int", default=0),
    poll_interval=dict(type="float", default=0.25),
    probe_timeout=dict(type="float", default=1.5),
    progress_interval=dict(type="float", default=10.0),
    lost_after=dict(type="float", default=3.0),
    detach_on_interrupt=dict(type="bool", default=False),
    interrupt_window=dict(type="float", default=1.0),
)
