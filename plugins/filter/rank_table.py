# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter ``ascend.cluster.rank_table``; documentation in ``rank_table.yml``, logic in plugin_utils."""

from __future__ import annotations

from typing import Any

from ansible.utils.display import Display

from ansible_collections.ascend.cluster.plugins.plugin_utils._errors import filter_errors


@filter_errors("rank_table")
def rank_table(
    servers: Any,
    version: Any = None,
    order: str = "server_id",
    status: str = "completed",
    chip: str | None = None,
    allow_partial_servers: bool = False,
    board_id: str | None = None,
    chip_info: str | None = None,
    deploy_mode: str | None = None,
    group_name: str | None = None,
    para_plane_nic_location: str | None = None,
    para_plane_nic_name: list | None = None,
) -> dict:
    # imported when called, not when Ansible loads the file (docs/contracts.md, filter files)
    from ansible_collections.ascend.cluster.plugins.plugin_utils._rank_table import build_rank_table

    return build_rank_table(
        servers,
        version=version,
        order=order,
        status=status,
        chip=chip,
        allow_partial_servers=allow_partial_servers,
        board_id=board_id,
        chip_info=chip_info,
        deploy_mode=deploy_mode,
        group_name=group_name,
        para_plane_nic_location=para_plane_nic_location,
        para_plane_nic_name=para_plane_nic_name,
        warn=lambda text: Display().warning(f"rank_table: {text}"),
    )


class FilterModule:
    def filters(self) -> dict:
        return {"rank_table": rank_table}
