# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Whether the servers of a job run the same driver, firmware and CANN: the versions each server's pre-flight read."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ansible_collections.ascend.cluster.plugins.plugin_utils._errors import ClusterSpecError


def mixed_versions(versions: Any, what: str = "npu-smi (driver) version", key: str = "npu_smi_version") -> str:
    """One sentence naming each version and its servers when ``versions`` (server -> version) differ, else ''.

    A value may also be the server's registered ``training_job`` pre-flight result: its ``key`` counts
    (``npu_smi_version``, ``firmware_version``, ``cann_toolkit_version``, ``cann_kernels_version``); a skipped result
    (the server runs no rank), or one without ``key`` (nothing read it), is left out.

    An unknown version (None or '': npu-smi missing, failing, or a header without ``Version:``) counts as a
    mismatch: nothing shows that such a server runs the others' driver (a broken driver is one of the reasons
    npu-smi does not answer). So two or more servers differ when any of them is unknown; the sentence names
    those last, as ``unknown on <servers>``. A single server has nothing to differ from.
    """
    if not isinstance(versions, Mapping):
        raise ClusterSpecError(f"versions must be a mapping of server to version, got {type(versions).__name__}")
    groups: dict[str, list[str]] = {}
    unknown = []
    for server, version in versions.items():
        if isinstance(version, Mapping):  # a registered pre-flight result (skipped on a server without ranks: left out)
            if version.get("skipped") or key not in version:
                continue
            version = version[key]
        if version in (None, ""):
            unknown.append(str(server))
        else:
            groups.setdefault(str(version), []).append(str(server))
    servers = sum(len(named) for named in groups.values()) + len(unknown)
    if len(groups) < 2 and not (unknown and servers > 1):
        return ""
    parts = [f"{version} on {', '.join(servers)}" for version, servers in sorted(groups.items(), key=lambda item: (-len(item[1]), item[0]))]
    if unknown:
        parts.append(f"unknown on {', '.join(unknown)}")
    return f"the servers run different {what}s: {'; '.join(parts)}"
