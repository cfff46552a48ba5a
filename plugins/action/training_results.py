# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action training_results: one module call per server, then the logs' archive copied and unpacked here.

The module (target side) reads the supervisor's result and packs every rank's ``train.log``; this
half copies that one archive with the connection (no module round trip), unpacks it into ``dest``
as ``device_<rank>.log`` and removes it from the server with one shell command.
"""

from __future__ import annotations

import os
import re
import tarfile
import tempfile
from shlex import quote

from ansible.errors import AnsibleError
from ansible.plugins.action import ActionBase

from ansible_collections.ascend.cluster.plugins.plugin_utils._action import Action

_LOG = re.compile(r"^device_\d+\.log$")


def unpack_logs(archive: str, dest: str) -> list:
    """Write the archive's ``device_<rank>.log`` members (nothing else) into ``dest``; their names."""
    os.makedirs(dest, exist_ok=True)
    written = []
    with tarfile.open(archive, "r:gz") as tar:
        for member in tar.getmembers():
            if not (member.isfile() and _LOG.match(member.name)):
                continue
            source = tar.extractfile(member)
            if source is None:
                continue
            target = os.path.join(dest, member.name)
            tmp = f"{target}.tmp"
            with source, open(tmp, "wb") as handle:
                while chunk := source.read(1 << 20):
                    handle.write(chunk)
            os.replace(tmp, target)
            written.append(member.name)
    return sorted(written)


def collect(action: ActionBase, args: dict, task_vars: dict) -> dict:
    """Run the module on ``action``'s server with ``args`` (``dest``: where the logs go), copy and unpack the logs' archive.

    The launch role runs it once per server after the job's watch (roles/launch_training/tasks/watch.yml).
    """
    args = dict(args)
    dest = args.pop("dest", None)
    args["archive"] = bool(dest)
    # training_job state=results: the same work (module_utils/_job/results), in the module the job's other calls use,
    # so that Ansible builds one payload per run for all of them (about 0.3 s off the end of a watched job)
    result = action._execute_module(  # pylint: disable=protected-access
        module_name="ascend.cluster.training_job", module_args={"state": "results", "results": args}, task_vars=task_vars
    )
    archive = result.pop("archive", None)
    if result.get("failed") or not archive:
        return result
    dest = os.path.expanduser(str(dest))
    fd, local = tempfile.mkstemp(prefix="ascend-logs-", suffix=".tar.gz")
    os.close(fd)
    try:
        action._connection.fetch_file(archive, local)  # pylint: disable=protected-access
        result["logs"] = unpack_logs(local, dest)
    except (AnsibleError, OSError, tarfile.TarError) as exc:
        result.update(failed=True, msg=f"cannot copy the logs' archive {archive} to {dest}: {exc}")
    finally:
        os.unlink(local)
        action._low_level_execute_command(f"rm -f {quote(archive)}", sudoable=True)  # pylint: disable=protected-access
    result["dest"] = dest
    return result


class ActionModule(Action):
    """Controller half of ``ascend.cluster.training_results``."""

    def act(self, args: dict, own: dict, task_vars: dict) -> dict:
        return collect(self, args, task_vars)
