# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action training_ranks: what the training_rank action does (split the command, refuse AOE
conflicts, on the controller), and reduce each rank to the ids the module takes.

The role passes the host's slice of the rank layout as it is (entries also carry ``device_ip``,
``server_id``, ...); the module's ``ranks`` suboptions take ``rank_id`` and ``device_id`` only.
Async (``async`` + ``poll: 0``) is passed through.
"""

from __future__ import annotations

from typing import Any

from ansible.errors import AnsibleActionFail

from ansible_collections.ascend.cluster.plugins.action.training_rank import ActionModule as TrainingRankAction


class ActionModule(TrainingRankAction):
    """Controller half of ``ascend.cluster.training_ranks``."""

    def run(self, tmp: Any = None, task_vars: dict | None = None) -> dict:
        ranks = self._task.args.get("ranks")
        if isinstance(ranks, list):
            try:
                self._task.args["ranks"] = [{"rank_id": rank["rank_id"], "device_id": rank["device_id"]} for rank in ranks]
            except (KeyError, TypeError) as exc:
                raise AnsibleActionFail(f"ranks: every entry needs rank_id and device_id ({exc!r})") from exc
        return super().run(tmp, task_vars)
