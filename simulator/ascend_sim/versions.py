"""The simulated firmware and CANN versions: ``npu-smi info -t board -i N`` and the CANN packages' version files.

Formats (docs/simulator.md, Sources): the board query as the npu-smi reference pages print it (one ``Name : value``
line per field, the name padded to 31 columns, indented by 8 spaces); ``ascend_toolkit_install.info`` and the kernels'
``opp_kernel/version.info`` as ``cat`` shows them in public reports (``key=value`` lines), written under the host's
CANN directory (``init --cann-dir``; ``cluster`` gives each server ``<server>/Ascend``) in the ``ascend-toolkit/latest``
layout, for this machine's architecture.

Versions: the chip's defaults, overridden by ``fault versions`` (``--firmware``, per device or host-wide,
``--toolkit``, ``--kernels``; ``none`` takes one away: the board prints ``NA``, a version file is removed).
"""

from __future__ import annotations

import os

# chip -> firmware the board query prints by default
FIRMWARE = {"910A": "7.1.0.4.218", "910B": "7.1.0.4.218", "A3": "7.7.0.9.220"}
# the CANN release the version files name by default (with the build lines of the same public report)
TOOLKIT = "8.3.RC1.alpha001"
TOOLKIT_INNER = "V100R001C23B046"
TOOLKIT_COMPATIBLE = "[V100R001C15],[V100R001C18],[V100R001C19],[V100R001C20],[V100R001C21],[V100R001C23]"
KERNELS_BUILD = "8.3.T5.0.B028"
KERNELS_TIMESTAMP = "20250807_092944934"
KERNELS_REQUIRED = (
    "amct_acl",
    "aoe",
    "compiler",
    "fwkplugin",
    "hccl",
    "nca",
    "ncs",
    "opp",
    "runtime",
    "toolkit",
)
NONE = "none"


def arch() -> str:
    return os.uname()[4]


def firmware(state: dict, device: int) -> str | None:
    """The firmware the board of ``device``'s NPU reports; None: ``NA``."""
    value = ((state.get("devices") or {}).get(str(device)) or {}).get("firmware") or state.get("firmware") or FIRMWARE[state["chip"]]
    return None if value == NONE else value


def toolkit_version(state: dict) -> str | None:
    value = state.get("cann_toolkit") or TOOLKIT
    return None if value == NONE else value


def kernels_version(state: dict) -> str | None:
    value = state.get("cann_kernels") or TOOLKIT
    return None if value == NONE else value


def board(state: dict, npu: int, chips: list, driver: str) -> str:
    """``npu-smi info -t board -i <npu>`` of the NPU whose chips are ``chips`` (device ids)."""
    versions = [firmware(state, device) for device in chips]
    shown = versions[0] if versions and all(v == versions[0] for v in versions) else None
    fields = (
        ("NPU ID", str(npu)),
        ("Product Name", "NA"),
        ("Model", "NA"),
        ("Manufacturer", "Huawei"),
        ("Serial Number", "NA"),
        ("Software Version", driver),
        ("Firmware Version", shown or "NA"),
        ("Board ID", "NA"),
        ("PCB ID", "NA"),
        ("BOM ID", "NA"),
        ("Chip Count", str(len(chips))),
        ("Faulty Chip Count", "0"),
    )
    return "".join("        %-31s: %s\n" % field for field in fields)


def toolkit_info(version: str, cann_dir: str) -> str:
    machine = arch()
    return ("package_name=Ascend-cann-toolkit\nversion=%s\ninnerversion=%s\ncompatible_version=%s\narch=%s\nos=linux\npath=%s\n") % (
        version,
        TOOLKIT_INNER,
        TOOLKIT_COMPATIBLE,
        machine,
        os.path.join(cann_dir, "ascend-toolkit", version, "%s-linux" % machine),
    )


def kernels_info(version: str) -> str:
    lines = [
        "Version=%s" % KERNELS_BUILD,
        "version_dir=%s" % version,
        "timestamp=%s" % KERNELS_TIMESTAMP,
        "ops_version=%s" % KERNELS_BUILD,
        "adk_version=%s" % KERNELS_BUILD,
    ]
    lines += ['required_package_%s_version=">=7.6, <=8.3"' % name for name in KERNELS_REQUIRED]
    return "\n".join(lines) + "\n"


def toolkit_path(cann_dir: str) -> str:
    return os.path.join(cann_dir, "ascend-toolkit", "latest", "%s-linux" % arch(), "ascend_toolkit_install.info")


def kernels_path(cann_dir: str) -> str:
    return os.path.join(cann_dir, "ascend-toolkit", "latest", "opp_kernel", "version.info")


def _put(path: str, text: str | None) -> None:
    if text is None:
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
        return
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.chmod(tmp, 0o444)
    os.replace(tmp, path)


def write_files(state: dict) -> None:
    """Write (or remove) the version files of the host's CANN directory as ``state`` says; nothing without one."""
    cann_dir = state.get("cann_dir")
    if not cann_dir:
        return
    toolkit = toolkit_version(state)
    kernels = kernels_version(state)
    _put(toolkit_path(cann_dir), toolkit_info(toolkit, cann_dir) if toolkit else None)
    _put(kernels_path(cann_dir), kernels_info(kernels) if kernels else None)
