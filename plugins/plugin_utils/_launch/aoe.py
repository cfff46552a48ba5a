# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The launch role's rule for a job environment that names the AOE variables itself.

The role manages ``TUNE_BANK_PATH`` (its ``ascend_aoe_bank_dir``) in a tuning run and in every
training run that may use the tuning repository, and ``AOE_MODE`` in a tuning run. A
``TUNE_BANK_PATH`` or ``AOE_MODE`` in the user's job environment that differs would make the tuner
write, or the training read, somewhere the pre-flight did not check, so it is refused before
anything starts. ``use_library=false`` without tuning leaves ``TUNE_BANK_PATH`` to the user.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ansible_collections.ascend.cluster.plugins.plugin_utils._errors import ClusterSpecError

AOE_NAMES = ("TUNE_BANK_PATH", "AOE_MODE")


def _same_mode(user: Any, ours: Any) -> bool:
    try:
        return int(user) == int(ours)
    except (TypeError, ValueError):
        return False


def reads_bank(aoe: Any, use_library: Any) -> bool:
    """Whether the run is a training run that may use the tuning repository: not a tuning run, and ``use_library``
    unset (the repository is used where it is on every server) or true. The one place that says it: the pre-flight
    verdict counts the repository for such a run only, and the role manages ``TUNE_BANK_PATH`` in it."""
    return not aoe and (use_library is None or bool(use_library))


def manages_bank(aoe: Any, use_library: Any) -> bool:
    """Whether the role sets ``TUNE_BANK_PATH``: a tuning run, or a training run that may use the repository."""
    return bool(aoe) or reads_bank(aoe, use_library)


def aoe_env_conflict(
    env: Mapping[str, Any],
    bank_dir: str,
    aoe: bool = False,
    aoe_mode: int = 4,
    use_library: bool | None = None,
    server: str = "this server",
) -> str:
    """Why ``env`` (the job's environment) conflicts with the role's AOE values, or '' when it does not."""
    if not isinstance(env, Mapping):
        raise ClusterSpecError(f"the job's environment must be a mapping of variables, got {env!r}")
    bank_differs = manages_bank(aoe, use_library) and "TUNE_BANK_PATH" in env and str(env["TUNE_BANK_PATH"]) != str(bank_dir)
    mode_differs = bool(aoe) and "AOE_MODE" in env and not _same_mode(env["AOE_MODE"], aoe_mode)
    if not (bank_differs or mode_differs):
        return ""
    user = ", ".join(f"{name}={value}" for name, value in env.items() if name in AOE_NAMES)
    role = f"TUNE_BANK_PATH={bank_dir}" + (f", AOE_MODE={aoe_mode}" if aoe else "")
    return (
        f"the job's environment (ascend_train_env / ascend_launch_extra_env) on {server} sets {user} but the role sets {role}: "
        "set ascend_aoe_bank_dir / ascend_aoe_mode instead, or use_library=false to pass your own TUNE_BANK_PATH unmanaged. "
        "Nothing was started."
    )
