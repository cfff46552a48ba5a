# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The NPU firmware and CANN (toolkit, kernels) versions of a server: parsers and reads.

Every server of a multi-server job must run the same AI processor model, firmware, driver and CANN version (CANN's
environment-variable reference, ``ASCEND_CACHE_PATH``). The driver's version is ``npu-smi info``'s header
(``_npu_smi.parse_version``); this module reads the rest, from the formats of the public Ascend docs (docs/launch.md
cites the pages):

- firmware: the ``Firmware Version`` field of ``npu-smi info -t board -i <NPU id>``, one ``Name : value`` line per field
  (``NA`` where it cannot be read, e.g. by a non-root user on some boards), one NPU per call;
- toolkit: the ``version=`` line of ``ascend_toolkit_install.info`` (``key=value`` lines), under
  ``<dir>/ascend-toolkit/latest/<arch>-linux/`` or, from CANN 8.5, ``<dir>/cann/<arch>-linux/``;
- kernels: ``version_dir=`` (else ``Version=``) of ``<dir>/ascend-toolkit/latest/opp_kernel/version.info``, or, from
  CANN 8.5 (where the kernels became the ops package), ``version=`` of ``<dir>/cann/<arch>-linux/ascend_ops_install.info``.

``<dir>`` is the install directory: ``/usr/local/Ascend`` (root's default) and, for another user, ``$HOME/Ascend``.
Where both layouts are installed, the ``ascend-toolkit`` one is read first: its ``set_env.sh`` is what a rank sources
by default. A version that cannot be read is None (unknown: the launch's gate counts it as different from every
other); kernels with no version file at all are :data:`NOT_INSTALLED` (they are an optional package before CANN 8.5).

Runs on target hosts: Python 3.8+, stdlib only.
"""

from __future__ import annotations

import os
import re
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

from ansible_collections.ascend.cluster.plugins.module_utils import _npu_smi as npu_smi

if TYPE_CHECKING:
    from ansible_collections.ascend.cluster.plugins.module_utils._command import BinFinder, Runner

ROOT_DIR = "/usr/local/Ascend"
NOT_INSTALLED = "not installed"
# what npu-smi prints in a field it cannot read
_UNSET = ("", "NA")
_FIRMWARE = re.compile(r"^\s*Firmware\s+Version\s*:[ \t]*(.*?)\s*$", re.IGNORECASE | re.MULTILINE)


def parse_board_firmware(raw: str) -> str | None:
    """The ``Firmware Version`` of ``npu-smi info -t board -i <id>``'s output, or None when it has none (or ``NA``)."""
    found = _FIRMWARE.search(raw)
    value = found.group(1) if found else ""
    return None if value in _UNSET else value


def parse_key_values(text: str) -> dict:
    """``key=value`` lines (the CANN packages' ``*.info`` files) -> dict; other lines are skipped, quotes around a
    value dropped."""
    values = {}
    for line in text.splitlines():
        key, sep, value = line.strip().partition("=")
        if sep and key.strip():
            values[key.strip()] = value.strip().strip('"')
    return values


def _first(values: dict, *keys: str) -> str | None:
    """The first of ``keys`` (any case) with a non-empty value."""
    lowered = dict((key.lower(), value) for key, value in values.items())
    for key in keys:
        if lowered.get(key.lower()):
            return lowered[key.lower()]
    return None


def toolkit_version(text: str) -> str | None:
    """The toolkit's version from ``ascend_toolkit_install.info`` (``version=8.3.RC2``), or None."""
    return _first(parse_key_values(text), "version")


def kernels_version(text: str) -> str | None:
    """The kernels' version from ``opp_kernel/version.info`` (``version_dir=8.3.RC1.alpha001``, the release the docs name;
    ``Version=`` is the build) or CANN 8.5's ``ascend_ops_install.info`` (``version=``), or None."""
    return _first(parse_key_values(text), "version_dir", "version")


def install_dirs(cann_dir: str | None = None) -> list:
    """Where CANN is looked for: ``cann_dir`` when given, else ``/usr/local/Ascend`` (and ``$HOME/Ascend`` for a non-root
    user, the non-root default)."""
    if cann_dir:
        return [cann_dir]
    dirs = [ROOT_DIR]
    if os.geteuid() != 0:
        dirs.append(os.path.join(os.path.expanduser("~"), "Ascend"))
    return dirs


def toolkit_files(base: str, arch: str) -> list:
    return [
        os.path.join(base, "ascend-toolkit", "latest", "%s-linux" % arch, "ascend_toolkit_install.info"),
        os.path.join(base, "cann", "%s-linux" % arch, "ascend_toolkit_install.info"),
    ]


def kernels_files(base: str, arch: str) -> list:
    return [
        os.path.join(base, "ascend-toolkit", "latest", "opp_kernel", "version.info"),
        os.path.join(base, "cann", "%s-linux" % arch, "ascend_ops_install.info"),
    ]


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return None


def read_cann(cann_dir: str | None = None, arch: str | None = None) -> dict:
    """``{"cann_toolkit_version", "cann_kernels_version"}`` of this server (module docstring): the first version file
    found under :func:`install_dirs`. The toolkit is None when no file gives its version; the kernels are None when their
    file gives none, :data:`NOT_INSTALLED` when there is no such file."""
    arch = arch or os.uname()[4]
    found: dict = {"cann_toolkit_version": None, "cann_kernels_version": NOT_INSTALLED}
    for base in install_dirs(cann_dir):
        toolkit = [text for text in (_read(path) for path in toolkit_files(base, arch)) if text is not None]
        kernels = [text for text in (_read(path) for path in kernels_files(base, arch)) if text is not None]
        if toolkit or kernels:
            found["cann_toolkit_version"] = toolkit_version(toolkit[0]) if toolkit else None
            found["cann_kernels_version"] = kernels_version(kernels[0]) if kernels else NOT_INSTALLED
            break
    return found


def firmware_summary(by_npu: dict) -> str | None:
    """One server's firmware version from ``{npu_id: version or None}``: the version every NPU runs; None when any is
    unknown (or there is no NPU); ``7.1.0.4.218 (NPU 0, 1) / 6.2.1.0 (NPU 2)`` when they differ, the most NPUs first (a
    version that then differs from every other server's)."""
    if not by_npu or any(version is None for version in by_npu.values()):
        return None
    groups: dict = {}
    for npu, version in sorted(by_npu.items()):
        groups.setdefault(version, []).append(str(npu))
    if len(groups) == 1:
        return next(iter(groups))
    ordered = sorted(groups.items(), key=lambda item: (-len(item[1]), item[0]))
    return " / ".join("%s (NPU %s)" % (version, ", ".join(npus)) for version, npus in ordered)


def read_firmware(
    module: BinFinder, binary: str, npu_ids: list, timeout: int = npu_smi.DEFAULT_TIMEOUT, runner: Runner | None = None
) -> dict:
    """``{npu_id: firmware version or None}``: ``npu-smi info -t board -i <id>`` for each NPU, at once (None where the
    call failed or printed no version)."""
    client = npu_smi.NpuSmi(module, binary, timeout=timeout, runner=runner)

    def board(npu_id: int) -> str | None:
        try:
            return parse_board_firmware(client.run(["info", "-t", "board", "-i", str(npu_id)]))
        except npu_smi.NpuSmiError:
            return None

    ids = sorted(set(npu_ids))
    if not ids:
        return {}
    with ThreadPoolExecutor(max_workers=min(len(ids), 16)) as pool:
        return dict(zip(ids, pool.map(board, ids)))
