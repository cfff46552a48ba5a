"""ascend.cluster.diagnose on the test bed (issue 26 items 2 and 6): a raw iptables rule, a table naming a device IP its
host does not have, and the plog of python under a `bash` wrapper.

The HCCL stand-in (docs/hccl-standin.md) is the training: its device port is a socket on the host's ethK, so the
host's packet filter applies to it, and it binds the table's device IP, so an IP the host does not have fails with
EI0019 and EADDRNOTAVAIL's text, as HCCL does on a device without that IP.
"""

from __future__ import annotations

import json
import os
import re

import pytest

from tests.helpers.ansible_cli import run_playbook
from tests.testbed.test_launch_bed import DIAGNOSE, HCCL_STAND_IN, TRAIN, bed_vars, states, with_device_ips

STANDIN = {
    "np": 4,  # two ranks (devices 0 and 1) on each of h1 and h2
    "ascend_hccl_connect_timeout": 20,  # below HCCL's 120-7200: the stand-in's own variable allows it
    "ascend_train_env": {"HCCL_STANDIN_ALLOW_SHORT_TIMEOUT": "1"},
}
DROP = ["INPUT", "-p", "tcp", "--dport", "16666", "-j", "DROP"]

# A training script as the README's `bash train_1p.sh` runs one: python is the shell's child, not exec'd. It hands
# the stand-in a copy of the job's table in which h1's device 1 has a stale IP (an old hccn.conf, another cluster's).
STALE_WRAPPER = """set -e
python3 - "$RANK_TABLE_FILE" "$PWD/stale_table.json" <<'PY'
import json, sys
table = json.load(open(sys.argv[1]))
for server in table["server_list"]:
    for device in server["device"]:
        if device["device_ip"] == "198.19.1.1":
            device["device_ip"] = "198.19.1.9"
json.dump(table, open(sys.argv[2], "w"))
PY
RANK_TABLE_FILE="$PWD/stale_table.json" python3 {standin} --size-mb 1
"""


@pytest.fixture(scope="module")
def launch_bed(bed):
    """The session bed with device IPs on every host, and a run root on the shared /var/tmp (as test_launch_bed's)."""
    yield from with_device_ips(bed)


def diagnose(launch_bed, job_id: str):
    _bed, root = launch_bed
    role_vars = {k: v for k, v in bed_vars(launch_bed, job_id).items() if k.startswith("ascend_") and k != "ascend_job_id"}
    done = run_playbook(DIAGNOSE, launch_bed[0].inventory, extra_vars=dict(role_vars, job_id=job_id, ascend_hccl_connect_timeout=20))
    assert done.rc == 0, str(done)
    return done, json.loads((root / "controller" / job_id / "diagnosis.json").read_text())


@pytest.mark.testbed
def test_a_raw_iptables_drop_rule_on_h2_is_named_by_diagnose_not_the_cabling(launch_bed):
    bed, _root = launch_bed
    bed.exec("h2", "iptables", "-I", *DROP)
    try:
        failed = run_playbook(
            TRAIN, bed.inventory, extra_vars=bed_vars(launch_bed, "fw-drop", train_command=f"python3 {HCCL_STAND_IN}", **STANDIN)
        )
        done, diagnosis = diagnose(launch_bed, "fw-drop")
    finally:
        bed.exec("h2", "iptables", "-D", *DROP)
    assert failed.rc != 0 and "EI0006" in failed.stdout, str(failed)
    rule = "iptables (nf_tables) INPUT: -A INPUT -p tcp -m tcp --dport 16666 -j DROP drops incoming TCP port 16666"
    named = f"h2 packet filter: {rule} - delete the rule, or accept the job's ports before it"
    assert re.search(r"diagnosis: EI0006 on ranks? [\d, -]+ from \d\d:\d\d:\d\d: " + re.escape(named), done.stdout), str(done)
    assert diagnosis["rows"][0]["code"] == "EI0006" and diagnosis["rows"][0]["seen_live"] == [named], diagnosis
    assert "parameter-plane link down" not in diagnosis["line"]
    assert diagnosis["live"]["firewall"]["h2"].endswith("; packet filter: " + rule), diagnosis["live"]
    assert "nothing drops or rejects" in diagnosis["live"]["firewall"]["h1"], diagnosis["live"]
    # the job's ports, from its env.log: HCCL's device port and 16 host ports from 60000 (HCCL_IF_BASE_PORT unset)
    assert diagnosis["live"]["job_ports"]["h2"]["60015"] == "HCCL's host ports (HCCL_IF_BASE_PORT unset: 60000)"


@pytest.mark.testbed
def test_a_table_naming_a_foreign_device_ip_is_a_wrong_ip_with_the_live_one_and_the_wrappers_plog_is_found(launch_bed, tmp_path):
    bed, root = launch_bed
    wrapper = root / "stale_train.sh"
    wrapper.write_text(STALE_WRAPPER.format(standin=HCCL_STAND_IN))
    failed = run_playbook(TRAIN, bed.inventory, extra_vars=bed_vars(launch_bed, "stale-ip", train_command=f"bash {wrapper}", **STANDIN))
    assert failed.rc != 0 and "Cannot assign requested address" in failed.stdout, str(failed)
    done, diagnosis = diagnose(launch_bed, "stale-ip")
    wrong = (
        "the rank table gives rank 1 (h1 device 1) device IP 198.19.1.9, but the device has 198.19.1.1 (hccn_tool -i 1 -ip -g) - "
        "rebuild the table from the devices (the rank_table playbook; train.yml rebuilds it)"
    )
    assert "diagnosis: EI0019 on rank 1 from " in done.stdout and done.stdout.count(wrong) >= 1, str(done)
    row = diagnosis["rows"][0]
    assert (row["code"], row["variant"], row["likely_causes"][0]) == ("EI0019", "address", wrong), diagnosis
    assert "in use" not in diagnosis["line"]
    # the plog is python's (the wrapper's child), not bash's: found by the pid the runner saw in the rank's tree
    rank1 = next(r for r in diagnosis["ranks"] if r["rank_id"] == 1)
    shell = states(launch_bed, "stale-ip")[1]["pid"]
    assert rank1["plog_files"], rank1
    plog_pid = int(os.path.basename(rank1["plog_files"][0])[len("plog-") :].split("_")[0])
    assert plog_pid != shell and plog_pid in states(launch_bed, "stale-ip")[1]["pids"], (rank1, shell)
    plog = bed.exec("h1", "cat", rank1["plog_files"][0]).stdout
    assert "listen on ip[198.19.1.9] and specific port[16666] fail" in plog, plog
