# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The support bundle on the controller (``ascend.cluster.collect``, module ``support_bundle`` run there): the servers'
parts (``_collect.files.collect``) and what the run knows of each - unreachable, failed - in one ``tar.gz`` with the bundle's
``manifest.json``, written aside and renamed into place. A member of a server's part never lands outside that server's
folder.

Runs where the module runs (the controller): Python 3.8+, stdlib only.
"""

from __future__ import annotations

import io
import json
import os
import re
import tarfile
import tempfile
import time

_SAFE = re.compile(r"^[A-Za-z0-9_.@+-]+$")


def _said(result: object, default: str) -> str:
    return str(result.get("msg") or default) if isinstance(result, dict) else default


def servers_from_results(parts: dict, fetched: dict, parts_dir: str) -> list:
    """:func:`bundle`'s ``servers`` from the play's registered results: ``parts`` (host -> ``support_files``' result,
    unreachable or failed ones included) and ``fetched`` (host -> the fetch's result), the fetched archives being
    ``<parts_dir>/<host>.tar.gz``."""
    servers = []
    for host in sorted(parts):
        part, copy = parts.get(host), fetched.get(host)
        entry: dict = {"host": host, "archive": None, "manifest": None}
        if not isinstance(part, dict) or part.get("skipped"):
            entry["error"] = "not collected (the play ended on this server before its part was gathered)"
        elif part.get("unreachable"):
            entry.update(error="could not be reached: %s" % _said(part, "unreachable"), unreachable=True)
        elif part.get("failed"):
            entry["error"] = _said(part, "its part could not be gathered")
        else:
            entry["manifest"] = part.get("manifest")
            if isinstance(copy, dict) and not copy.get("failed") and not copy.get("unreachable") and not copy.get("skipped"):
                entry["archive"] = os.path.join(parts_dir, "%s.tar.gz" % host)
            else:
                entry["error"] = "its part could not be copied to the controller: %s" % _said(copy, "not copied")
                entry["unreachable"] = bool(isinstance(copy, dict) and copy.get("unreachable"))
        servers.append(entry)
    return servers


def _member_name(host: str, name: str) -> str | None:
    """``<host>/<name>`` for a member of a server's archive, None for a name that would leave the bundle's folder."""
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if not parts or ".." in parts or not _SAFE.match(host):
        return None
    return "%s/%s" % (host, "/".join(parts))


def bundle(path: str, job_id: str, servers: list, extra_files: dict | None = None, mode: int = 0o600) -> dict:
    """Write the bundle ``path`` (a ``tar.gz``, written aside and renamed, ``mode``) from ``servers``:
    ``[{"host", "archive": local path or None, "manifest": the server's or None, "error": why there is none}]``, and
    ``extra_files`` (``{name in the bundle: local path}``, the controller's own copies). Returns the bundle's manifest."""
    manifest: dict = {"job_id": job_id, "created": time.time(), "servers": {}, "controller": [], "unreachable": [], "failed": []}
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".bundle-", dir=directory)
    try:
        with os.fdopen(fd, "wb") as raw, tarfile.open(fileobj=raw, mode="w:gz") as out:
            top = "support-%s" % (job_id if _SAFE.match(job_id or "") else "job")
            for server in servers:
                host = str(server.get("host"))
                entry: dict = {"manifest": server.get("manifest")}
                if server.get("error"):
                    entry["error"] = server["error"]
                    (manifest["unreachable"] if server.get("unreachable") else manifest["failed"]).append(
                        {"host": host, "why": server["error"]}
                    )
                archive = server.get("archive")
                if archive:
                    try:
                        with tarfile.open(archive, mode="r:gz") as part:
                            for member in part.getmembers():
                                name = _member_name(host, member.name)
                                handle = part.extractfile(member) if member.isfile() else None
                                if name is None or handle is None:
                                    continue
                                info = tarfile.TarInfo("%s/%s" % (top, name))
                                info.size, info.mode, info.mtime = member.size, 0o600, member.mtime
                                out.addfile(info, handle)
                    except (OSError, tarfile.TarError, EOFError) as exc:
                        entry["error"] = "its archive could not be read: %s" % exc
                        manifest["failed"].append({"host": host, "why": entry["error"]})
                manifest["servers"][host] = entry
            for name, local in sorted((extra_files or {}).items()):
                try:
                    with open(local, "rb") as handle:
                        data = handle.read()
                except OSError:
                    continue
                info = tarfile.TarInfo("%s/controller/%s" % (top, name))
                info.size, info.mode, info.mtime = len(data), 0o600, int(time.time())
                out.addfile(info, io.BytesIO(data))
                manifest["controller"].append({"path": "controller/" + name, "source": local, "bytes": len(data)})
            data = (json.dumps(manifest, indent=2, sort_keys=True) + "\n").encode("utf-8")
            info = tarfile.TarInfo("%s/manifest.json" % top)
            info.size, info.mode, info.mtime = len(data), 0o600, int(time.time())
            out.addfile(info, io.BytesIO(data))
        os.chmod(tmp, mode)
        os.rename(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return manifest
