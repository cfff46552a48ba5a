#!/usr/bin/env bash
# `make demo`: make a simulated 2 x 8 NPU cluster on this machine and run the main job against it.
# Nothing here touches the real machine's network or firewall: both servers are local
# connections wired to simulator state under build/sim-cluster.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
cd "$repo"
np=${NP:-16}
root=$repo/build/sim-cluster

echo "== simulated cluster: 2 freshly racked servers x 8 NPUs (910B, no device IPs yet) under $root"
python3 simulator/bin/ascend-sim -q cluster --root "$root" --servers 2 --chip 910B --devices 8 --force

# Ansible finds collections under ansible_collections/<namespace>/<name>: expose this checkout.
mkdir -p build/collections/ansible_collections/ascend
[ -L build/collections/ansible_collections/ascend/cluster ] || ln -sfn "$repo" build/collections/ansible_collections/ascend/cluster
export ANSIBLE_COLLECTIONS_PATH=$repo/build/collections
export ANSIBLE_CALLBACK_RESULT_FORMAT=yaml
export ANSIBLE_HOST_KEY_CHECKING=False

# Prepare: device IPs from the plan, firewall (mode none here: both servers are this machine),
# netdetect on the peer server and a proven net_health on every device, the rank table written.
echo "== ansible-playbook ascend.cluster.prepare -i examples/sim/inventory.yml -e @examples/sim/ip_plan.yml"
ansible-playbook ascend.cluster.prepare -i examples/sim/inventory.yml -e @examples/sim/ip_plan.yml

# The main job: select np NPUs, write the job's own rank table into its run directory, launch one gated rank per NPU
# running a real data-parallel PyTorch (gloo) training, watch it, report per rank.
echo "== ansible-playbook ascend.cluster.train -i examples/sim/inventory.yml -e np=$np -e @examples/train/sim.yml -e @examples/train/gloo.yml"
ansible-playbook ascend.cluster.train -i examples/sim/inventory.yml -e "np=$np" \
    -e @examples/train/sim.yml -e @examples/train/gloo.yml -e "torch_python=$repo/build/torch-venv/bin/python" "$@"
echo "== rank table: $root/rank_table.json (prepare's); the job's own: $root/runs/<job>/rank_table.json; rank logs: $root/runs/<job>/device_<rank>/"
