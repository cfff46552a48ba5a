# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The NPU firmware and CANN (toolkit, kernels) versions of a server: parsers and reads.

Every server of a multi-server job must run the same AI processor model, firmware, driver and CANN version (CANN's
environment-variable reference, ``ASCEND_CACHE_PATH``). The driver's version is ``npu-smi info``'s header
(``_npu.smi.parse_version``); this module reads the rest, from the formats of the public Ascend docs (docs/launch.md
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

from ansible_collections.ascend.cluster.plugins.module_utils._npu import smi as npu_smi

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


def parse_board(raw: str) -> dict:
    """``npu-smi info -t board -i <id>`` -> ``{"firmware", "compatibility", "compatibility_line", "board_id",
    "pci_device_id"}`` (None where the board prints none, or ``NA``). ``Compatibility`` is the driver's verdict on the
    firmware: ``OK``, ``NOK`` (they do not work together), ``UNKNOWN``, ``NOT SUPPORT`` (the npu-smi reference,
    npusmi_008; CANN's installation guide, instg_0064); boards of some products print no such line."""
    fields = npu_smi.parse_fields(raw)

    def value(name: str) -> tuple:
        found, line = npu_smi._field(fields, name)  # pylint: disable=protected-access
        return (None, line) if found in (None, "", "NA") else (found, line)

    compatibility, line = value("Compatibility")
    return {
        "firmware": parse_board_firmware(raw),
        "compatibility": compatibility,
        "compatibility_line": line,
        "board_id": value("Board ID")[0],
        "pci_device_id": value("PCI Device ID")[0],
    }


# --- the driver's and the firmware's version.info (key=value lines), and how the packages say what they work with ---
#
# Keys as the files print them (cat of the files in public reports; tests/corpus/versions lists them with sources):
# the driver's <driver dir>/version.info: Version=24.1.rc3, Innerversion=V100R001C19SPC001B124,
#   compatible_version=[V100R001C13],...,[V100R001C19] (the CANN packages it works with, by inner version),
#   compatible_version_fw=[7.0.0,7.5.99] (the firmware versions it works with), package_version=24.1.rc3;
# the firmware's <firmware dir>/version.info: Version=7.5.0.1.129, package_version, compatible_version_drv=[24.1,24.1.];
# a CANN package's ascend_<pkg>_install.info: version=8.0.0, innerversion=V100R001C20SPC001B251,
#   compatible_version=[V100R001C15],[V100R001C17],... (the drivers it works with, by inner version; an item may be a
#   range, [V100R001C15,V100R001C18]).
# Where the driver is installed: /etc/ascend_install.info, Driver_Install_Path_Param / Firmware_Install_Path_Param
# (CANN's installation guide, "File Paths", instg_0044).
INSTALL_INFO = "/etc/ascend_install.info"
_ITEM = re.compile(r"\[([^\]]*)\]")
_INNER = re.compile(r"V(\d+)R(\d+)C(\d+)", re.IGNORECASE)


def compat_items(value: str | None) -> list:
    """``[V100R001C15],[V100R001C17,V100R001C18]`` -> ``[("V100R001C15", "V100R001C15"), ("V100R001C17", "V100R001C18")]``
    (a one-version item is a range of itself); [] for None or no item."""
    items = []
    for body in _ITEM.findall(value or ""):
        parts = [part.strip() for part in body.split(",") if part.strip()]
        if parts:
            items.append((parts[0], parts[-1]))
    return items


def inner_code(value: str | None) -> tuple | None:
    """The release of an inner version (``V100R001C19SPC001B124`` -> ``(100, 1, 19)``), None when it has none."""
    found = _INNER.search(value or "")
    return tuple(int(part) for part in found.groups()) if found else None


def _numbers(value: str) -> tuple | None:
    parts = value.strip().split(".")
    return tuple(int(part) for part in parts) if parts and all(part.isdigit() for part in parts) else None


def in_version_range(version: str, low: str, high: str) -> bool | None:
    """Whether a dotted version (a firmware's ``7.5.0.1.129``) lies in ``[low, high]`` (``[7.0.0,7.5.99]``), its parts
    compared as numbers over as many parts as each bound has; None when either is not all numbers."""
    value, lo, hi = _numbers(version), _numbers(low), _numbers(high)
    if value is None or lo is None or hi is None:
        return None
    return lo <= value[: len(lo)] and value[: len(hi)] <= hi


def in_inner_items(inner: str | None, items: list) -> bool | None:
    """Whether the release of ``inner`` is one of ``items`` (:func:`compat_items`), None when it has none or no item
    names one."""
    code = inner_code(inner)
    bounds = []
    for low, high in items:
        lo, hi = inner_code(low), inner_code(high)
        if lo is not None and hi is not None:
            bounds.append((lo, hi))
    if code is None or not bounds:
        return None
    return any(lo <= code <= hi for lo, hi in bounds)


def parse_version_info(text: str) -> dict:
    """A package's ``key=value`` version file (driver, firmware, CANN) -> ``{key: (value, line)}``, keys as printed."""
    found = {}
    for line in text.splitlines():
        key, sep, value = line.strip().partition("=")
        if sep and key.strip() and key.strip() not in found:
            found[key.strip()] = (value.strip().strip('"'), line.strip())
    return found


def install_paths(install_info: str = INSTALL_INFO) -> dict:
    """``{"driver": dir, "firmware": dir}`` from ``/etc/ascend_install.info`` (``Driver_Install_Path_Param``,
    ``Firmware_Install_Path_Param``); {} when the file cannot be read, a key left out when the file names no such dir."""
    text = _read(install_info)
    if text is None:
        return {}
    values = parse_version_info(text)
    paths = {}
    for what, key in (("driver", "Driver_Install_Path_Param"), ("firmware", "Firmware_Install_Path_Param")):
        if values.get(key, ("",))[0]:
            paths[what] = values[key][0]
    return paths


def package_files(cann_dir: str | None = None, install_info: str = INSTALL_INFO) -> dict:
    """``{"driver": [paths], "firmware": [paths]}`` where the driver's and the firmware's ``version.info`` are looked
    for, in order: under ``cann_dir`` when given (an install directory that holds the driver too), under the directories
    ``/etc/ascend_install.info`` names, under ``/usr/local/Ascend``."""
    named = install_paths(install_info)
    files: dict = {}
    for what in ("driver", "firmware"):
        bases = ([cann_dir] if cann_dir else []) + ([named[what]] if what in named else []) + [ROOT_DIR]
        seen: list = []
        for base in bases:
            path = os.path.join(base, what, "version.info")
            if path not in seen:
                seen.append(path)
        files[what] = seen
    return files


def read_packages(cann_dir: str | None = None, arch: str | None = None, install_info: str = INSTALL_INFO) -> dict:
    """The version files that say what works with what on this server: ``{"driver": (path, fields) | None, "firmware":
    (path, fields) | None, "toolkit": (path, fields) | None}`` (fields: :func:`parse_version_info`), the first file found
    of each (:func:`package_files`, the toolkit's as :func:`read_cann` looks for it)."""
    arch = arch or os.uname()[4]
    found: dict = {}
    for what, paths in package_files(cann_dir, install_info).items():
        found[what] = next(((path, parse_version_info(text)) for path, text in ((p, _read(p)) for p in paths) if text is not None), None)
    found["toolkit"] = None
    for base in install_dirs(cann_dir):
        texts = [(path, _read(path)) for path in toolkit_files(base, arch)]
        hit = next(((path, text) for path, text in texts if text is not None), None)
        if hit:
            found["toolkit"] = (hit[0], parse_version_info(hit[1]))
            break
    return found


def _get(package: tuple | None, key: str) -> tuple:
    """``(value, line)`` of ``key`` (any case) in a read package, ``(None, None)`` when absent or empty."""
    if not package:
        return None, None
    for name, (value, line) in package[1].items():
        if name.lower() == key.lower() and value:
            return value, line
    return None, None


def fit(packages: dict, boards: dict | None = None) -> dict:
    """Whether the driver, the firmware and CANN of one server work together: ``{"problems": [...], "unknown": [...]}``,
    each a sentence naming the file (or the board query), the key and the line read.

    - The board's ``Compatibility`` (``npu-smi info -t board``, from ``boards``: ``{npu_id: parse_board(...)}``): ``NOK``
      is a problem - the driver itself says it does not work with the firmware.
    - The driver's ``compatible_version_fw`` ranges must hold the firmware's ``Version``.
    - The driver and the CANN toolkit must accept each other by inner version: the driver's ``compatible_version`` lists
      the toolkit's ``innerversion``, or the toolkit's ``compatible_version`` lists the driver's ``Innerversion`` (a newer
      driver lists older CANN releases, a newer CANN older drivers; every public pairing passes one of the two).
    A file that is missing or a key it does not have is ``unknown`` (that check was not made), not a problem.
    """
    problems: list = []
    unknown: list = []
    for npu_id, board in sorted((boards or {}).items()):
        if board and board.get("compatibility") == "NOK":
            problems.append(
                "npu-smi info -t board -i %s reports the NPU driver and firmware incompatible (%r)"
                % (npu_id, board.get("compatibility_line"))
            )
    driver, firmware, toolkit = packages.get("driver"), packages.get("firmware"), packages.get("toolkit")
    for what, package in (
        ("the driver's version.info", driver),
        ("the firmware's version.info", firmware),
        ("the CANN toolkit's install info", toolkit),
    ):
        if package is None:
            unknown.append("%s was not found" % what)
    fw_version, fw_line = _get(firmware, "Version")
    fw_ranges, fw_ranges_line = _get(driver, "compatible_version_fw")
    if firmware and driver and fw_version and fw_ranges:
        verdicts = [in_version_range(fw_version, lo, hi) for lo, hi in compat_items(fw_ranges)]
        if any(verdicts):
            pass
        elif verdicts and all(verdict is False for verdict in verdicts):
            problems.append(
                "the firmware %s (%s: %r) is outside the driver's compatible firmware (%s: %r)"
                % (fw_version, firmware[0], fw_line, driver[0], fw_ranges_line)
            )
        else:
            unknown.append("the firmware %r or the driver's %r cannot be compared" % (fw_line, fw_ranges_line))
    elif driver and firmware:
        unknown.append("%s has no compatible_version_fw, or %s no Version" % (driver[0], firmware[0]))
    drv_inner, drv_inner_line = _get(driver, "Innerversion")
    drv_list, drv_list_line = _get(driver, "compatible_version")
    cann_inner, cann_inner_line = _get(toolkit, "innerversion")
    cann_list, cann_list_line = _get(toolkit, "compatible_version")
    if driver and toolkit:
        driver_says = in_inner_items(cann_inner, compat_items(drv_list))
        cann_says = in_inner_items(drv_inner, compat_items(cann_list))
        if driver_says or cann_says:
            pass
        elif driver_says is False or cann_says is False:
            problems.append(
                "the driver and the CANN toolkit do not list each other: the driver's %r (%s) does not name the toolkit's "
                "%r, and the toolkit's %r (%s) does not name the driver's %r"
                % (drv_list_line, driver[0], cann_inner_line, cann_list_line, toolkit[0], drv_inner_line)
            )
        else:
            unknown.append(
                "the driver's and the CANN toolkit's inner versions cannot be compared (%r, %r)" % (drv_inner_line, cann_inner_line)
            )
    return {"problems": problems, "unknown": unknown}


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


def read_boards(
    module: BinFinder, binary: str, npu_ids: list, timeout: int = npu_smi.DEFAULT_TIMEOUT, runner: Runner | None = None
) -> dict:
    """``{npu_id: parse_board(...) or None}``: ``npu-smi info -t board -i <id>`` for each NPU, at once (None where the
    call failed)."""
    client = npu_smi.NpuSmi(module, binary, timeout=timeout, runner=runner)

    def board(npu_id: int) -> dict | None:
        try:
            return parse_board(client.run(["info", "-t", "board", "-i", str(npu_id)]))
        except npu_smi.NpuSmiError:
            return None

    ids = sorted(set(npu_ids))
    if not ids:
        return {}
    with ThreadPoolExecutor(max_workers=min(len(ids), 16)) as pool:
        return dict(zip(ids, pool.map(board, ids)))


def read_firmware(
    module: BinFinder, binary: str, npu_ids: list, timeout: int = npu_smi.DEFAULT_TIMEOUT, runner: Runner | None = None
) -> dict:
    """``{npu_id: firmware version or None}`` of :func:`read_boards` (None where the call failed or printed no version)."""
    return dict((npu, board["firmware"] if board else None) for npu, board in read_boards(module, binary, npu_ids, timeout, runner).items())
