# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action training_ranks: what the training_rank action does (split the command, refuse AOE
conflicts, on the controller), and reduce each rank to the ids the module takes. In a launcher mode
(``launcher=torchrun|msrun``) it also refuses, before anything starts, a server whose ranks the launcher
would number otherwise than the rank table (``_job_launcher.check_layout``).

The role passes the host's slice of the rank layout as it is (entries also carry ``device_ip``,
``server_id``, ...); the module's ``ranks`` suboptions take ``rank_id`` and ``device_id`` only.
Async (``async`` + ``poll: 0``) is passed through. A Ctrl-C (or SIGTERM) to ansible-playbook while
the runners are being started stops the job on the server at once (its abort file makes every
runner, also one forked later, give up at the gate): see ``plugin_utils/_interrupt``.
"""

from __future__ import annotations

from typing import Any

from ansible.errors import AnsibleActionFail

from ansible_collections.ascend.cluster.plugins.action.training_rank import ActionModule as TrainingRankAction
from ansible_collections.ascend.cluster.plugins.module_utils._job_launcher import PER_DEVICE, check_layout
from ansible_collections.ascend.cluster.plugins.plugin_utils import _interrupt as interrupt


class ActionModule(TrainingRankAction):
    """Controller half of ``ascend.cluster.training_ranks``."""

    def run(self, tmp: Any = None, task_vars: dict | None = None) -> dict:
        ranks = self._task.args.get("ranks")
        if isinstance(ranks, list):
            try:
                self._task.args["ranks"] = [{"rank_id": rank["rank_id"], "device_id": rank["device_id"]} for rank in ranks]
            except (KeyError, TypeError) as exc:
                raise AnsibleActionFail(f"ranks: every entry needs rank_id and device_id ({exc!r})") from exc
        args = self._task.args
        launcher = args.get("launcher") or PER_DEVICE
        if launcher != PER_DEVICE and isinstance(ranks, list):
            try:  # before any runner starts: a launcher would number the ranks otherwise than the table
                check_layout(str(launcher), args["ranks"], int(args.get("node_rank") or 0))
            except (TypeError, ValueError) as exc:
                return dict(failed=True, msg=str(exc))
        with interrupt.Guard() as guard:
            try:
                return super().run(tmp, task_vars)
            except interrupt.Interrupted as exc:
                return interrupt.release_staging(
                    self, guard, exc.signum, str(args.get("job_id")), args.get("job_root"), task_vars or {}, args.get("kill_grace")
                )
