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

# chip -> the driver npu-smi prints by default (``init --driver`` gives a server another)
DEFAULT_DRIVER = {"910A": "24.1.0", "910B": "24.1.0", "A3": "25.3.rc1"}
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


def driver_version(state: dict) -> str:
    """The driver version npu-smi prints: a ``fault npu-smi-version``'s, else the server's ``--driver``, else the chip's."""
    return state.get("npu_smi_version") or state.get("driver") or DEFAULT_DRIVER[state["chip"]]


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


# The driver releases whose version files the corpus holds (tests/corpus/versions): a server given one of these with
# ``--driver`` gets its driver's and its firmware's version.info (the keys and lines of those files; Version the
# server's, the firmware's the board's); any other driver has none, as a server whose driver directory lacks them.
# driver -> (the driver's version.info lines after Version=, the firmware's lines after Version=)
DRIVER_FILES = {
    # MindCluster's fault-diagnosis test data (tests/corpus/versions/driver_version_23.0.7_faultdiag.info, firmware_...)
    "23.0.7": (
        (
            "ascendhal_version=7.35.19",
            "aicpu_version=1.0",
            "tdt_version=1.0",
            "log_version=1.0",
            "prof_version=2.0",
            "dvppkernels_version=1.1",
            "tsfw_version=1.0",
            "Innerversion=V100R001C15SPC012B220",
            "compatible_version=[V100R001C29],[V100R001C30],[V100R001C13],[V100R001C15]",
            "compatible_version_fw=[7.0.0,7.1.99]",
            "package_version=23.0.7",
        ),
        ("firmware_version=1.0", "package_version=23.0.7", "compatible_version_drv=[23.0.rc3,23.0.rc3.],[23.0.0,23.0.0.]"),
    ),
    # MindCluster's fault-diagnosis guide (tests/corpus/versions/driver_version_24.1.rc1_doc_faultdiag.info)
    "24.1.rc1": (
        (
            "ascendhal_version=7.35.19",
            "aicpu_version=1.0",
            "tdt_version=1.0",
            "log_version=1.0",
            "prof_version=2.0",
            "dvppkernels_version=1.1",
            "tsfw_version=1.0",
            "Innerversion=V100R001C15SPC006B220",
            "compatible_version=[V100R001C30],[V100R001C13],[V100R001C15],[V100R001C17]",
            "compatible_version_fw=[7.0.0,7.2.99]",
        ),
        ("firmware_version=1.0", "package_version=23.0.7", "compatible_version_drv=[23.0.rc3,23.0.rc3.],[23.0.0,23.0.0.]"),
    ),
}


def driver_info(driver: str) -> str | None:
    """The driver's ``version.info`` of ``driver`` (:data:`DRIVER_FILES`), None for a driver the corpus has none of."""
    known = DRIVER_FILES.get(driver)
    return "\n".join(("Version=%s" % driver,) + known[0]) + "\n" if known else None


def firmware_info(driver: str, version: str | None) -> str | None:
    known = DRIVER_FILES.get(driver)
    return "\n".join(("Version=%s" % version,) + known[1]) + "\n" if known and version else None


def _first_generation_board(state: dict, npu: int, chips: list, driver: str, shown: str | None, bus_id: str) -> str:
    """A first-generation training server's board query, tab-indented (tests/corpus/npu_smi/board_910a_d801_23.0.5_tabs.txt:
    Compatibility, the PCI ids - 0xD801 - and the slot, no product fields)."""
    fields = (
        ("NPU ID", str(npu)),
        ("Software Version", driver),
        ("Firmware Version", shown or "NA"),
        ("Compatibility", state.get("compatibility") or "OK"),
        ("Board ID", "0x02"),
        ("PCB ID", "A"),
        ("BOM ID", "1"),
        ("PCIe Bus Info", bus_id),
        ("Slot ID", str(npu)),
        ("Class ID", "NA"),
        ("PCI Vendor ID", "0x19E5"),
        ("PCI Device ID", "0xD801"),
        ("Subsystem Vendor ID", "0x0200"),
        ("Subsystem Device ID", "0x0100"),
        ("Chip Count", str(len(chips))),
    )
    return "".join("\t%-31s: %s\n" % field for field in fields)


def board(state: dict, npu: int, chips: list, driver: str, bus_id: str = "NA") -> str:
    """``npu-smi info -t board -i <npu>`` of the NPU whose chips are ``chips`` (device ids): a first-generation server's
    (chip 910A) in its training-server layout, the others in the npu-smi reference's."""
    versions = [firmware(state, device) for device in chips]
    shown = versions[0] if versions and all(v == versions[0] for v in versions) else None
    if state["chip"] == "910A":
        return _first_generation_board(state, npu, chips, driver, shown, bus_id)
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
    """Write (or remove) the version files of the host's CANN directory as ``state`` says; nothing without one. The
    directory holds the driver and the firmware too (``<dir>/driver/version.info``, ``<dir>/firmware/version.info``)
    when the server's driver is one of :data:`DRIVER_FILES`."""
    cann_dir = state.get("cann_dir")
    if not cann_dir:
        return
    toolkit = toolkit_version(state)
    kernels = kernels_version(state)
    _put(toolkit_path(cann_dir), toolkit_info(toolkit, cann_dir) if toolkit else None)
    _put(kernels_path(cann_dir), kernels_info(kernels) if kernels else None)
    driver = driver_version(state)
    fw = state.get("firmware") or FIRMWARE[state["chip"]]
    _put(os.path.join(cann_dir, "driver", "version.info"), driver_info(driver))
    _put(os.path.join(cann_dir, "firmware", "version.info"), firmware_info(driver, None if fw == NONE else fw))
