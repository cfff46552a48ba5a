# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A playbook's ``-e`` interface: check what the operator gave before any server is touched.

Each playbook declares its extra vars once (a mapping ``name -> spec``, the play variable
``ascend_playbook_inputs`` of its first play); :func:`input_problems` checks the extra vars given
against it and :func:`inputs_markdown` renders the same declaration for ``docs/inputs.md``.

A spec has ``type`` (``int``, ``number`` - a whole or decimal number, ``bool``, ``str``, ``command``, ``regex``), optional
``choices``, ``min``,
``required`` (with ``required_unless``: names that stand in for it), ``default`` and
``description``. ``command`` is a training command: a string split like a shell splits words
(``_job.command.split_command``, the same check the launch makes on the controller); ``regex`` a
Python regular expression (``_job.progress.compile_progress``, the check the ranks' stage makes).
"""

from __future__ import annotations

import difflib
import math
from typing import Any, Iterable, Mapping

from ansible_collections.ascend.cluster.plugins.module_utils._job.command import split_command
from ansible_collections.ascend.cluster.plugins.module_utils._job.progress import compile_progress
from ansible_collections.ascend.cluster.plugins.plugin_utils._errors import ClusterSpecError

TRUE_WORDS = frozenset(("true", "yes", "on", "1", "y", "t"))
FALSE_WORDS = frozenset(("false", "no", "off", "0", "n", "f"))
TYPES = ("int", "number", "bool", "str", "command", "regex")
# How close an unknown name must be to a declared one to count as its typo (difflib's ratio):
# nps / np 0.8, framwork / framework 0.94, kill_stall / kill_stale 0.9; job / job_id 0.67 is not.
CLOSE = 0.75
HOSTS_VAR = "ascend_hosts"


def _check_spec(name: str, spec: Any) -> Mapping[str, Any]:
    if not isinstance(spec, Mapping) or spec.get("type") not in TYPES:
        raise ClusterSpecError(f"input {name!r}: the declaration needs a type, one of {', '.join(TYPES)} (got {spec!r})")
    return spec


def _show(value: Any) -> str:
    return repr(value) if isinstance(value, str) else str(value)


def value_problem(name: str, spec: Mapping[str, Any], value: Any) -> str | None:
    """Why ``-e name=value`` is wrong for ``spec``, or None when it is right."""
    kind = spec["type"]
    if value is None:
        return None
    if kind == "int":
        number = value if isinstance(value, int) and not isinstance(value, bool) else None
        if isinstance(value, str) and value.strip().isdigit():
            number = int(value)
        low = spec.get("min")
        if number is None or (low is not None and number < low):
            floor = f" of at least {low}" if low is not None else ""
            return f"{name}={_show(value)} is not a whole number{floor}: write for example -e {name}={spec.get('example', 16)}"
    elif kind == "number":
        decimal: float | None = float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None
        if isinstance(value, str):
            try:
                decimal = float(value)
            except ValueError:
                decimal = None
        low = spec.get("min")
        if decimal is None or math.isnan(decimal) or (low is not None and decimal < low):
            floor = f" of at least {low}" if low is not None else ""
            return f"{name}={_show(value)} is not a number{floor}: write for example -e {name}={spec.get('example', 12.5)}"
    elif kind == "bool":
        if not isinstance(value, bool) and str(value).strip().lower() not in TRUE_WORDS | FALSE_WORDS:
            return f"{name}={_show(value)} is not true or false: write -e {name}=true or -e {name}=false"
    elif kind in ("str", "command", "regex"):
        if not isinstance(value, (str, int, float)) or isinstance(value, bool):
            return f"{name}={_show(value)} is not a string"
        try:
            if kind == "command" and str(value).strip():
                split_command(str(value))
            if kind == "regex":
                compile_progress(str(value))
        except ValueError as exc:
            return str(exc) if kind == "regex" else f"{name}: {exc}"
    choices = spec.get("choices")
    if choices and value not in choices:
        return f"{name}={_show(value)} is not one of {', '.join(map(str, choices))}"
    return None


def _empty(value: Any) -> bool:
    """Not given: None, an empty list or mapping, a string of nothing or only blanks (``-e train_command=' '``)."""
    return value is None or (isinstance(value, (list, dict)) and not value) or (isinstance(value, str) and not value.strip())


def input_problems(
    given: Mapping[str, Any],
    declared: Mapping[str, Any],
    hosts: Iterable[str] | None = None,
    pattern: str | None = None,
    present: Iterable[str] = (),
) -> list[str]:
    """Everything wrong with the extra vars ``given`` (name -> value) for the ``declared`` inputs.

    - a name that is not declared but close to one that is: "did you mean";
    - a declared input whose value has the wrong type or is not among its choices;
    - a ``required`` input that is missing, unless one of its ``required_unless`` names was given
      or is in ``present`` (names the selected servers define in the inventory);
    - with ``hosts`` (the hosts the playbook's ``pattern`` selects, after ``--limit``): none.

    Names neither declared nor close to one are left alone: they may be role variables
    (``ascend_*``) or variables the inventory templates.
    """
    if not isinstance(given, Mapping) or not isinstance(declared, Mapping):
        raise ClusterSpecError("input_problems: the extra vars and the declared inputs must be mappings")
    specs = {name: _check_spec(name, spec) for name, spec in declared.items()}
    problems = []
    for name in sorted(given):
        if name in specs:
            problem = value_problem(name, specs[name], given[name])
        else:
            close = difflib.get_close_matches(name, list(specs), n=1, cutoff=CLOSE)
            problem = f"unknown extra var {name!r}: did you mean {close[0]}?" if close else None
        if problem:
            problems.append(problem)
    defined = set(present) | {name for name, value in given.items() if not _empty(value)}
    for name, spec in specs.items():
        stand_ins = list(spec.get("required_unless", []))
        if spec.get("required") and not defined & {name, *stand_ins}:
            instead = f" (or {', '.join(stand_ins)})" if stand_ins else ""
            problems.append(f"{name} is required{instead}: {spec.get('description', '')}".rstrip(": "))
    if hosts is not None and not list(hosts):
        where = pattern if pattern is not None else "ascend"
        problems.append(
            f"no host selected: the pattern {where!r} (-e {HOSTS_VAR}=...) matches no host of the inventory"
            f" (after --limit, if given). Put the NPU servers in group 'ascend', or name them with -e {HOSTS_VAR}=<pattern>"
        )
    return problems


def _default_text(value: Any) -> str:
    """A default as the operator writes it: unset, true/false, "" for the empty string."""
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return str(value).lower()
    return '""' if value == "" else str(value)


def _cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


BAD_SAMPLES = {"int": "abc", "number": "fast", "bool": "maybe", "str": ["a"], "command": "bash", "regex": "step ("}


def inputs_markdown(declared: Mapping[str, Any]) -> str:
    """The ``declared`` inputs as a Markdown table: name, type, default, meaning, what a bad value gets."""
    lines = ["| -e | type | default | meaning | a bad value gets |", "|---|---|---|---|---|"]
    for name, spec in declared.items():
        _check_spec(name, spec)
        kind = spec["type"] + (f" ({', '.join(map(str, spec['choices']))})" if spec.get("choices") else "")
        default = "required" if spec.get("required") else _default_text(spec.get("default"))
        sample = spec.get("bad", "unknown" if spec.get("choices") else BAD_SAMPLES[spec["type"]])
        bad = value_problem(name, spec, sample) or ""
        lines.append(f"| `{name}` | {_cell(kind)} | {_cell(default)} | {_cell(spec.get('description', ''))} | {_cell(bad)} |")
    return "\n".join(lines) + "\n"
