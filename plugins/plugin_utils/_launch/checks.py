# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The launch's refusals, decided once on the controller for every server (filters ``aoe_refusal`` and ``preflight_verdict``).

The launch role reads each server once in its pre-flight (``training_job state=preflight``: the clock, the
devices' holders, the NIC, the ports, the chips, the AOE tuning repository) and decides here, in one
``run_once`` task, whether to go on - each refusal with the sentence the operator needs, in the order the
checks used to run one task each: the clocks, npu-smi (a server where it could not be read), the tuning
repository, what a server's own checks refused, the drivers, firmware and CANN. ``aoe_refusal`` is what can be refused
before any server is read (the job's AOE settings).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ansible_collections.ascend.cluster.plugins.plugin_utils._errors import ClusterSpecError
from ansible_collections.ascend.cluster.plugins.plugin_utils._launch.aoe import aoe_env_conflict, reads_bank
from ansible_collections.ascend.cluster.plugins.plugin_utils._launch.versions import mixed_versions

REFUSED = "launch refused, nothing was started: "
BANK = "*_gradient_fusion.json"
TUNE_AND_USE = (
    "aoe=true (tune, writing the repository) and use_library=true (train with the repository) cannot be combined: "
    "run with aoe=true first, then train without it - the repository is used by default. Nothing was started."
)
PER_NODE = (
    "aoe=true runs one tuning process on rank 0; it cannot run under launcher={launcher}: drop -e launcher (or use "
    "launcher=per_device) for the tuning run, then train with the launcher. Nothing was started."
)
A3_MODE = (
    "A3 supports AOE_MODE 2 only: {server} is an A3 server and ascend_aoe_mode is 4 (gradient tuning); "
    "set ascend_aoe_mode=2 (operator tuning). Nothing was started."
)
BANK_REQUIRED = (
    "use_library=true, but there is no AOE tuning repository (" + BANK + ") on {lack}: run the tuning first (aoe=true; "
    "it copies the repository to every selected server), or use_library=false to train without it. Nothing was started."
)
BANK_PARTIAL = (
    "the AOE tuning repository (" + BANK + ") is on {have} but missing on {lack}: every rank must read the same repository. "
    "Re-run the tuning (aoe=true; it copies the repository to every selected server), or use_library=false to train without it. "
    "Nothing was started."
)
CHIP_WARNING = "{server}: device {device} ({chip}): npu-smi info shows Health {health}; the launch goes on, but check the chip"
MIXED = (
    REFUSED + "{mixed}. Ranks on different drivers fail in HCCL or train differently: install one driver everywhere, "
    "or allow it with ascend_launch_allow_mixed_versions=true"
)
MIXED_UNKNOWN = (
    " (an unknown version counts as a different one: npu-smi info printed none on {servers}; check npu-smi and the driver there)"
)
# The versions besides the driver's that every server of a job must share (CANN's environment-variable reference):
# (the pre-flight result's key, what the sentence calls them, what to do, why one can be unknown and what to do there).
OTHER_VERSIONS = (
    (
        "firmware_version",
        "NPU firmware version",
        "install one NPU firmware everywhere (the one released with the driver)",
        "npu-smi info -t board -i <NPU> printed no Firmware Version on {servers} (npu-smi not read, or NA, which some boards "
        "print to a non-root user); read it there as root, or check npu-smi and the firmware",
    ),
    (
        "cann_toolkit_version",
        "CANN toolkit version",
        "install one CANN toolkit everywhere",
        "no CANN toolkit version file (ascend-toolkit/latest/<arch>-linux/ascend_toolkit_install.info, or from CANN 8.5 "
        "cann/<arch>-linux/ascend_toolkit_install.info) gave a version on {servers}; install CANN there, or point "
        "ascend_cann_dir at its install directory",
    ),
    (
        "cann_kernels_version",
        "CANN kernels version",
        "install the same CANN kernels (ops) package everywhere, the toolkit's release",
        "the kernels' version file (opp_kernel/version.info, or from CANN 8.5 ascend_ops_install.info) gave no version on "
        "{servers}; reinstall the kernels there",
    ),
)
MIXED_OTHER = "{mixed}. Ranks on different firmware or CANN fail or train differently: {fix}, or allow it with ascend_launch_allow_mixed_versions=true"
# One server's driver, firmware and CANN that do not work together (the pre-flight's version_fit, _sw_versions.fit).
UNFIT = (
    "the driver, firmware and CANN of a server do not work together - {problems}. Install the firmware released with the "
    "driver and a CANN release that works with it (the packages' version files list each other), or allow it with "
    "ascend_launch_allow_mixed_versions=true"
)
UNFIT_UNKNOWN = "whether the driver, firmware and CANN of a server work together was not fully checked on {servers}: {unknown}"
NPU_SMI_REFUSED = (
    REFUSED + "npu-smi could not be read on {servers} - {problems}. Without it the health of the chips and the processes "
    "holding the selected devices there are unknown: a leftover process fails the job later (EJ0001), a failing chip fails "
    "the training. Repair npu-smi there (the driver), or launch without these checks with ascend_launch_allow_unknown_health=true"
)
NPU_SMI_WARNING = (
    "{server}: {problem}: the health of its chips and the processes holding its devices were not checked "
    "(ascend_launch_allow_unknown_health=true); the launch goes on"
)


def _host(hostvars: Mapping[str, Any], host: str) -> Mapping[str, Any]:
    try:
        found = hostvars[host]
    except KeyError as exc:
        raise ClusterSpecError(f"{host!r} is not in hostvars") from exc
    if not isinstance(found, Mapping):
        raise ClusterSpecError(f"hostvars[{host!r}] must be a mapping, got {type(found).__name__}")
    return found


def _hosts(hosts: Any) -> list[str]:
    if isinstance(hosts, (str, bytes)) or not isinstance(hosts, Sequence):
        raise ClusterSpecError(f"hosts must be a list of inventory host names, got {hosts!r}")
    return [str(host) for host in hosts]


def selected(hosts: Any, hostvars: Mapping[str, Any]) -> list[str]:
    """The hosts that hold ranks of the job (a non-empty ``ascend_local_ranks``), in play order."""
    return [host for host in _hosts(hosts) if _host(hostvars, host).get("ascend_local_ranks")]


def aoe_refusal(
    hosts: Any,
    hostvars: Mapping[str, Any],
    aoe: bool = False,
    use_library: bool | None = None,
    aoe_mode: int = 4,
    launcher: str = "per_device",
) -> str:
    """Why the job's AOE settings refuse the launch before any server is read, or ''.

    Reads, of every selected host (``ascend_local_ranks``), ``ansible_facts.ascend_npu.chip``,
    ``ascend_train_env``, ``ascend_launch_extra_env`` and ``ascend_aoe_bank_dir``.
    """
    if aoe and launcher != "per_device":
        return PER_NODE.format(launcher=launcher)
    if aoe and use_library is not None and use_library:
        return TUNE_AND_USE
    chosen = selected(hosts, hostvars)
    refusals = []
    if aoe and int(aoe_mode) == 4:
        for host in chosen:
            facts = _host(hostvars, host).get("ansible_facts") or {}
            if (facts.get("ascend_npu") or {}).get("chip") == "A3":
                refusals.append(A3_MODE.format(server=host))
    if not refusals:
        for host in chosen:
            found = _host(hostvars, host)
            env = dict(found.get("ascend_train_env") or {})
            env.update(found.get("ascend_launch_extra_env") or {})
            conflict = aoe_env_conflict(env, str(found.get("ascend_aoe_bank_dir", "")), aoe, int(aoe_mode), use_library, host)
            if conflict:
                refusals.append(conflict)
    return "; ".join(refusals)


def _bank_where(hostvars: Mapping[str, Any], host: str) -> str:
    return f"{host} ({_host(hostvars, host).get('ascend_aoe_bank_dir', '')})"


def _device_order(item: tuple[Any, Any]) -> tuple[int, str]:
    device = str(item[0])
    return (int(device), device) if device.isdigit() else (-1, device)


def chip_warnings(results: Mapping[str, Mapping[str, Any]], hostvars: Mapping[str, Any]) -> list[str]:
    """One warning per selected device whose chip is not healthy but does not refuse the launch (Warning, UNKNOWN),
    naming its server: each server's pre-flight returns ``chip_health`` (``{device: health}``, Alarm and Critical
    refused there), and a warning printed by a server's module names no server. The chip's name is the one the
    server's facts read (``ansible_facts.ascend_npu.chip_name``)."""
    warnings = []
    for host, found in results.items():
        health = found.get("chip_health")
        if not isinstance(health, Mapping):
            continue
        facts = (_host(hostvars, host).get("ansible_facts") or {}).get("ascend_npu") or {}
        chip = facts.get("chip_name") or "NPU"
        errors: Mapping[Any, Any] = found["chip_errors"] if isinstance(found.get("chip_errors"), Mapping) else {}
        for device, state in sorted(health.items(), key=_device_order):
            if state != "OK":
                error = errors.get(device, errors.get(str(device)))
                warnings.append(
                    CHIP_WARNING.format(server=host, device=device, chip=chip, health=state) + (" (%s)" % error if error else "")
                )
    return warnings


def unfit_warnings(results: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """The servers whose pre-flight could not check every part of their driver / firmware / CANN fit (a version file
    not found, a key it does not have): one warning per set of reasons, naming its servers and what was not checked."""
    groups: dict[tuple, list[str]] = {}
    for host, found in results.items():
        fit = found.get("version_fit")
        if isinstance(fit, Mapping) and fit.get("unknown"):
            groups.setdefault(tuple(str(reason) for reason in fit["unknown"]), []).append(host)
    return [UNFIT_UNKNOWN.format(servers=", ".join(hosts), unknown="; ".join(reasons)) for reasons, hosts in groups.items()]


def _unknown(results: Mapping[str, Mapping[str, Any]], key: str) -> list[str]:
    return [host for host, found in results.items() if key in found and found[key] in (None, "")]


def mixed_refusal(results: Mapping[str, Mapping[str, Any]]) -> str:
    """The refusal for servers that run different versions, or '': the driver (``npu_smi_version``), then each of
    :data:`OTHER_VERSIONS` that differs, each sentence with its servers, what to do, and why a version is unknown where
    one is (an unknown version counts as a different one); then the servers whose own driver, firmware and CANN do not
    work together (``version_fit``, :data:`UNFIT`). A driver-only mismatch reads as it always did (``MIXED``)."""
    sentences = []
    mixed = mixed_versions(results)
    if mixed:
        unknown = _unknown(results, "npu_smi_version")
        sentences.append(MIXED.format(mixed=mixed) + (MIXED_UNKNOWN.format(servers=", ".join(unknown)) if unknown else ""))
    for key, what, fix, why in OTHER_VERSIONS:
        mixed = mixed_versions(results, what=what, key=key)
        if mixed:
            unknown = _unknown(results, key)
            note = " (an unknown version counts as a different one: %s)" % why.format(servers=", ".join(unknown)) if unknown else ""
            sentences.append(MIXED_OTHER.format(mixed=mixed, fix=fix) + note)
    unfit = [
        "%s: %s" % (host, "; ".join(found["version_fit"]["problems"]))
        for host, found in results.items()
        if isinstance(found.get("version_fit"), Mapping) and found["version_fit"].get("problems")
    ]
    if unfit:
        sentences.append(UNFIT.format(problems="; ".join(unfit)))
    if not sentences:
        return ""
    rest = [sentence[len(REFUSED) :] if sentence.startswith(REFUSED) else sentence for sentence in sentences]
    return REFUSED + ". ".join([rest[0]] + [sentence[:1].upper() + sentence[1:] for sentence in rest[1:]])


def preflight_verdict(
    hosts: Any,
    hostvars: Mapping[str, Any],
    result: str = "_ascend_preflight",
    aoe: bool = False,
    use_library: bool | None = None,
    allow_mixed_versions: bool = False,
) -> dict[str, Any]:
    """The launch's decision from every server's pre-flight result (registered as ``result``).

    ``{"refusal", "clocks", "tune_bank", "warnings"}``: ``refusal`` the one message that refuses the launch ('' to go on) -
    the clocks refused, else every server whose npu-smi could not be read (``npu_smi_status`` ``refuse``: the
    module checked nothing else there), else the tuning repository (on some selected servers only, or missing with
    ``use_library=true``), else what a server's own checks refused (its message; ``host: message`` each when
    several did), else the servers' different drivers, NPU firmware, CANN toolkit or kernels (:func:`mixed_refusal`)
    unless ``allow_mixed_versions`` (an unknown one counts as different); ``clocks`` every
    clock reading (the table's rows); ``tune_bank`` whether every rank gets ``TUNE_BANK_PATH`` (a training
    run that found the repository); ``warnings`` what the operator should know of a launch that goes on (a server whose
    npu-smi could not be read, let through by ``allow_unknown_health``; a chip whose health is Warning or UNKNOWN:
    :func:`chip_warnings`), each naming its server.
    """
    names = _hosts(hosts)
    results: dict[str, Mapping[str, Any]] = {}
    for host in names:
        found = _host(hostvars, host).get(result)
        if found is None:
            continue
        if not isinstance(found, Mapping):
            raise ClusterSpecError(f"{result} of {host} must be a task result (a mapping), got {type(found).__name__}")
        results[host] = found
    ran = {host: found for host, found in results.items() if not found.get("skipped")}
    clocks = [dict(found["clock"]) for found in ran.values() if isinstance(found.get("clock"), Mapping) and "offset" in found["clock"]]
    verdict: dict[str, Any] = {"refusal": "", "clocks": clocks, "tune_bank": False, "warnings": []}
    refused = [str(clock.get("msg", "")) for clock in clocks if clock.get("status") == "refuse"]
    if refused:
        verdict["refusal"] = REFUSED + "; ".join(refused)
        return verdict
    unread = {host: str(found.get("npu_smi_problem")) for host, found in ran.items() if found.get("npu_smi_status") == "refuse"}
    if unread:
        verdict["refusal"] = NPU_SMI_REFUSED.format(
            servers=", ".join(unread), problems="; ".join(f"{host}: {problem}" for host, problem in unread.items())
        )
        return verdict
    if reads_bank(aoe, use_library):
        have = [_bank_where(hostvars, host) for host, found in ran.items() if int(found.get("bank_files") or 0) > 0]
        lack = [_bank_where(hostvars, host) for host, found in ran.items() if int(found.get("bank_files") or 0) <= 0]
        if lack and use_library is not None and use_library:
            verdict["refusal"] = BANK_REQUIRED.format(lack=", ".join(lack))
            return verdict
        if lack and have:
            verdict["refusal"] = BANK_PARTIAL.format(have=", ".join(have), lack=", ".join(lack))
            return verdict
        verdict["tune_bank"] = bool(have)
    failed = {host: str(found.get("msg", "")) for host, found in ran.items() if found.get("failed")}
    if failed:
        verdict["refusal"] = (
            next(iter(failed.values())) if len(failed) == 1 else "; ".join(f"{host}: {msg}" for host, msg in failed.items())
        )
        return verdict
    if not allow_mixed_versions:
        refusal = mixed_refusal(ran)
        if refusal:
            verdict["refusal"] = refusal
            return verdict
    verdict["warnings"] = (
        [
            NPU_SMI_WARNING.format(server=host, problem=found["npu_smi_problem"])
            for host, found in ran.items()
            if found.get("npu_smi_status") == "allowed" and found.get("npu_smi_problem")
        ]
        + chip_warnings(ran, hostvars)
        + unfit_warnings(ran)
    )
    return verdict
