# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""One rank's smoke check: read the rank's environment and rank table and assert what HCCL would.

Started by ``ascend.cluster.smoke`` on every rank in place of the training command (Python 3,
standard library only, so it runs on any NPU server's ``python3``)::

    python3 ascend_rank_check.py [--framework mindspore|tensorflow|pytorch|mindspore_legacy] [--report-only]

Checks, one line each (``PASS``, ``FAIL`` or ``SKIP`` when a check it needs failed):

- ``rank_table``: the table (``RANK_TABLE_FILE``; ``MINDSPORE_HCCL_CONFIG_PATH`` for
  ``mindspore_legacy``) is readable JSON of a known format, ``status`` completed, rank ids 0..N-1 once each;
- ``rank_size``: ``RANK_SIZE`` is the number of ranks in the table;
- ``rank_id``: the table has an entry for ``RANK_ID``;
- ``device_id``: that entry's device is ``DEVICE_ID`` (and ``ASCEND_DEVICE_ID`` when set);
- ``server_id``: that entry's server is an address of this machine (binding a socket to it works);
- ``device_ip``: that entry has a device IP when more than one server takes part;
- ``device_num``: ``DEVICE_NUM`` (when set) is this server's device count in the table;
- PyTorch only: ``rank`` (``RANK`` == ``RANK_ID``), ``world_size`` (``WORLD_SIZE`` == ``RANK_SIZE``),
  ``master_addr`` (rank 0's server), ``local_rank`` (this rank's place among its server's ranks).

The last line is ``ASCEND_RANK_CHECK_VERDICT {json}`` (``ok``, ``rank_id``, ``device_id``,
``passed``, ``failed: [{check, detail}]``) for the smoke summary. The exit code is 1 when a
check failed, 0 otherwise; ``--report-only`` always exits 0 (by hand). The smoke run launches it with
the launch's fail-fast off, so that one failing rank does not stop the others before they report.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
from typing import Any

VERDICT = "ASCEND_RANK_CHECK_VERDICT"
FRAMEWORKS = ("mindspore", "tensorflow", "pytorch", "mindspore_legacy")
PASS, FAIL, SKIP = "PASS", "FAIL", "SKIP"


class TableError(ValueError):
    """The rank table cannot be used; the message says why."""


def _ranks_v1(table):
    """Entries of a ``1.0`` / ``1.2`` table (``server_list[].device[]``)."""
    ranks = []
    servers = table.get("server_list")
    if not isinstance(servers, list) or not servers:
        raise TableError("server_list is missing or empty")
    if str(table.get("server_count", len(servers))) != str(len(servers)):
        raise TableError("server_count %s but %d entries in server_list" % (table.get("server_count"), len(servers)))
    for server in servers:
        if not isinstance(server, dict) or not isinstance(server.get("device"), list):
            raise TableError("a server_list entry has no device list: %r" % (server,))
        for device in server["device"]:
            ranks.append((device, server.get("server_id"), device.get("rank_id")))
    return ranks


def _ranks_template2(table):
    """Entries of a template-2 table (``group_list[].instance_list[]``, one device each)."""
    ranks = []
    for group in table.get("group_list") or []:
        for instance in group.get("instance_list") or []:
            for device in instance.get("devices") or []:
                ranks.append((device, instance.get("server_id"), instance.get("rank_id")))
    if not ranks:
        raise TableError("group_list has no instances")
    return ranks


def load_table(path):
    """``[{rank_id, device_id, device_ip, server_id}]`` in rank order, or TableError."""
    try:
        with open(path) as handle:
            table = json.load(handle)
    except (OSError, ValueError) as exc:
        raise TableError("cannot read %s: %s" % (path, exc)) from exc
    if not isinstance(table, dict):
        raise TableError("%s is not a JSON object" % path)
    if table.get("status") != "completed":
        raise TableError("status is %r, HCCL waits for 'completed'" % (table.get("status"),))
    raw = _ranks_template2(table) if "group_list" in table else _ranks_v1(table)
    ranks = []
    for device, server_id, rank_id in raw:
        try:
            entry: dict[str, Any] = {
                "rank_id": int(rank_id),
                "device_id": int(device.get("device_id")),
                "device_ip": str(device.get("device_ip") or ""),
                "server_id": str(server_id or ""),
            }
        except (TypeError, ValueError, AttributeError):
            raise TableError("malformed device entry %r (server %s)" % (device, server_id)) from None
        if not entry["server_id"]:
            raise TableError("rank %d has no server_id" % entry["rank_id"])
        ranks.append(entry)
    ranks.sort(key=lambda e: e["rank_id"])
    if [e["rank_id"] for e in ranks] != list(range(len(ranks))):
        raise TableError(
            "rank ids %s are not 0..%d once each (HCCL: 'The rank_id in the ranktable must start "
            "from 0 or it is used repeatedly')" % ([e["rank_id"] for e in ranks], len(ranks) - 1)
        )
    return ranks


def local_address(address):
    """(True, "") when a socket can be bound to ``address`` on this machine, else (False, why)."""
    try:
        infos = socket.getaddrinfo(address, None, 0, socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        return False, "does not resolve (%s)" % exc
    why = "no address"
    for family, kind, proto, _name, sockaddr in infos:
        sock = socket.socket(family, kind, proto)
        try:
            sock.bind((sockaddr[0], 0) + tuple(sockaddr[2:]))
            return True, ""
        except OSError as exc:
            why = exc.strerror or str(exc)
        finally:
            sock.close()
    return False, why


def _int(env, name):
    """The integer value of ``env[name]``, or None when unset or not an integer."""
    try:
        return int(env.get(name, ""))
    except ValueError:
        return None


class Checks:
    """Collects ``(status, name, detail)`` in order; a check whose needs failed is SKIPped."""

    def __init__(self):
        self.results = []
        self.failed_names = set()

    def add(self, name, ok, detail, needs=()):
        missing = [n for n in needs if n in self.failed_names]
        if missing:
            self.results.append((SKIP, name, "needs %s" % ", ".join(missing)))
            self.failed_names.add(name)
            return False
        self.results.append((PASS if ok else FAIL, name, detail))
        if not ok:
            self.failed_names.add(name)
        return ok


def _check_table(checks, env, framework):
    """The ``rank_table`` check; the table's entries, or None when it failed."""
    var = "MINDSPORE_HCCL_CONFIG_PATH" if framework == "mindspore_legacy" else "RANK_TABLE_FILE"
    path = env.get(var, "")
    if not path:
        checks.add("rank_table", False, "%s is not set" % var)
        return None
    try:
        ranks = load_table(path)
    except TableError as exc:
        checks.add("rank_table", False, "%s=%s: %s" % (var, path, exc))
        return None
    servers = len(set(e["server_id"] for e in ranks))
    checks.add("rank_table", True, "%s=%s: %d ranks on %d server(s)" % (var, path, len(ranks), servers))
    return ranks


def _check_pytorch(checks, env, ranks, entry):
    """RANK, WORLD_SIZE, MASTER_ADDR and LOCAL_RANK against RANK_ID, RANK_SIZE and the table."""
    checks.add(
        "rank",
        env.get("RANK") is not None and env.get("RANK") == env.get("RANK_ID"),
        "RANK=%s, RANK_ID=%s" % (env.get("RANK"), env.get("RANK_ID")),
    )
    checks.add(
        "world_size",
        env.get("WORLD_SIZE") is not None and env.get("WORLD_SIZE") == env.get("RANK_SIZE"),
        "WORLD_SIZE=%s, RANK_SIZE=%s" % (env.get("WORLD_SIZE"), env.get("RANK_SIZE")),
    )
    master = ranks[0]["server_id"] if ranks else None
    checks.add(
        "master_addr",
        env.get("MASTER_ADDR") == master,
        "MASTER_ADDR=%s, rank 0's server is %s" % (env.get("MASTER_ADDR"), master),
        needs=["rank_table"],
    )
    local = None
    if entry is not None:
        mine = [e["rank_id"] for e in ranks if e["server_id"] == entry["server_id"]]
        local = mine.index(entry["rank_id"])
    checks.add(
        "local_rank",
        _int(env, "LOCAL_RANK") == local,
        "LOCAL_RANK=%s, the table makes this rank number %s of its server" % (env.get("LOCAL_RANK"), local),
        needs=["rank_id"],
    )


def run_checks(env, framework="mindspore", is_local=local_address):
    """Every check for one rank's environment ``env``; a list of ``(status, name, detail)``."""
    checks = Checks()
    ranks = _check_table(checks, env, framework) or []
    size = _int(env, "RANK_SIZE")
    checks.add(
        "rank_size", size == len(ranks), "RANK_SIZE=%s, %d ranks in the table" % (env.get("RANK_SIZE"), len(ranks)), needs=["rank_table"]
    )
    rank_id = _int(env, "RANK_ID")
    entry = next((e for e in ranks if e["rank_id"] == rank_id), None)
    checks.add(
        "rank_id",
        entry is not None,
        "RANK_ID=%s: %s"
        % (env.get("RANK_ID"), "server %s device %s" % (entry["server_id"], entry["device_id"]) if entry else "no such rank in the table"),
        needs=["rank_table"],
    )
    entry = entry or {}
    names = ["DEVICE_ID"] + (["ASCEND_DEVICE_ID"] if "ASCEND_DEVICE_ID" in env else [])
    checks.add(
        "device_id",
        all(_int(env, name) == entry.get("device_id") for name in names),
        "table device %s, %s" % (entry.get("device_id"), ", ".join("%s=%s" % (n, env.get(n)) for n in names)),
        needs=["rank_id"],
    )
    ok, why = is_local(entry["server_id"]) if entry else (False, "")
    where = "is this machine" if ok else "is not an address of this machine (%s)" % why
    checks.add("server_id", ok, "server %s %s" % (entry.get("server_id"), where), needs=["rank_id"])
    servers = len(set(e["server_id"] for e in ranks))
    need = ": HCCL needs it" if servers > 1 else ""
    checks.add(
        "device_ip",
        servers < 2 or bool(entry.get("device_ip")),
        "device_ip %s (%d servers%s)" % (entry.get("device_ip") or "missing", servers, need),
        needs=["rank_id"],
    )
    if "DEVICE_NUM" in env:
        count = len([e for e in ranks if e["server_id"] == entry.get("server_id")])
        checks.add(
            "device_num",
            _int(env, "DEVICE_NUM") == count,
            "DEVICE_NUM=%s, %d devices of this server in the table" % (env["DEVICE_NUM"], count),
            needs=["rank_id"],
        )
    if framework == "pytorch":
        _check_pytorch(checks, env, ranks, entry or None)
    return checks.results


def verdict(results, env):
    """The summary's machine-readable line."""
    failed = [{"check": name, "detail": detail} for status, name, detail in results if status == FAIL]
    return "%s %s" % (
        VERDICT,
        json.dumps(
            {
                "ok": not failed,
                "rank_id": env.get("RANK_ID"),
                "device_id": env.get("DEVICE_ID"),
                "passed": len([r for r in results if r[0] == PASS]),
                "failed": failed,
            },
            sort_keys=True,
        ),
    )


def main(argv=None, env=None, out=None):
    parser = argparse.ArgumentParser(description="Check one rank's environment and rank table as HCCL would.")
    parser.add_argument("--framework", choices=FRAMEWORKS, default="mindspore")
    parser.add_argument("--report-only", action="store_true", help="exit 0 even when a check fails")
    args = parser.parse_args(argv)
    env = os.environ if env is None else env
    out = out or sys.stdout
    results = run_checks(env, args.framework)
    for status, name, detail in results:
        out.write("%s %-11s %s\n" % (status, name, detail))
    out.write(verdict(results, env) + "\n")
    out.flush()
    failed = any(status == FAIL for status, _name, _detail in results)
    return 1 if failed and not args.report_only else 0


if __name__ == "__main__":
    sys.exit(main())
