# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""AWX / Automation Platform survey specs from a playbook's declared ``-e`` inputs (``ascend_playbook_inputs``).

The format is AWX's job template survey spec (AWX's API documentation ``awx/api/templates/api/job_template_survey_spec.md``,
checked on POST by ``JobTemplateSurveySpec._validate_spec_data`` in ``awx/api/views/__init__.py``): a mapping with ``name``,
``description`` (strings) and ``spec``, a non-empty list of questions, each with ``type`` (``text``, ``textarea``,
``password``, ``integer``, ``float``, ``multiplechoice``, ``multiselect``), ``question_name``, ``question_description``,
``variable`` (unique), ``required`` (a bool), and ``default`` ("" or a value of the type's Python type: ``int`` for
``integer``, ``float`` for ``float``, ``str`` otherwise), ``min`` / ``max`` (an ``int`` or null), ``choices`` (a list)
for the choice types, whose default must be one of them.

How a declaration becomes a question (docs/inputs.md, *AWX surveys*):

- ``int``: ``integer`` with the declaration's ``min``; ``number``: ``float`` (its ``min`` only when whole: AWX takes an
  ``int`` there);
- ``bool``: ``multiplechoice`` of ``true`` / ``false`` (the playbooks' check reads those words);
- ``str`` with ``choices``: ``multiplechoice``; ``str``, ``command``, ``regex``: ``text``;
- an unset default (``null``) is "" (no default); ``required`` only where the declaration has no stand-in
  (``required_unless``: the inventory may give the command instead, so AWX must not insist).

The playbooks' own check (``ascend.cluster.playbook_inputs``) still runs on every launch: the survey only asks.
"""

from __future__ import annotations

import json
from typing import Any, Mapping

import yaml

from ansible_collections.ascend.cluster.plugins.plugin_utils._errors import ClusterSpecError
from ansible_collections.ascend.cluster.plugins.plugin_utils._inputs import TYPES

# AWX's question types, for the unit test's check and the docs.
AWX_TYPES = ("text", "textarea", "password", "integer", "float", "multiplechoice", "multiselect")
BOOL_CHOICES = ["true", "false"]


def declared_inputs(playbook_text: str) -> tuple[dict, str]:
    """``(ascend_playbook_inputs, the name of the play that does the work)`` of a playbook's text.

    The inputs are the first play's (the one that checks them, ``ascend.cluster.playbook_inputs``); the name is the
    second play's, or the first's in a one-play playbook.
    """
    plays = yaml.safe_load(playbook_text)
    if not isinstance(plays, list) or not plays or not isinstance(plays[0], dict):
        raise ClusterSpecError("a playbook is a list of plays")
    inputs = (plays[0].get("vars") or {}).get("ascend_playbook_inputs")
    if not isinstance(inputs, dict) or not inputs:
        raise ClusterSpecError("the playbook's first play declares no ascend_playbook_inputs")
    work = plays[1] if len(plays) > 1 and isinstance(plays[1], dict) else plays[0]
    return inputs, str(work.get("name") or "")


def _default(kind: str, spec: Mapping[str, Any]) -> Any:
    value = spec.get("default")
    if value is None:
        return ""
    if kind == "integer":
        return int(value)
    if kind == "float":
        return float(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def question(name: str, spec: Mapping[str, Any]) -> dict:
    """One survey question for the declared input ``name``."""
    if not isinstance(spec, Mapping) or spec.get("type") not in TYPES:
        raise ClusterSpecError(f"input {name!r}: the declaration needs a type, one of {', '.join(TYPES)} (got {spec!r})")
    declared = spec["type"]
    choices: list = []
    low = spec.get("min")
    if declared == "int":
        kind = "integer"
    elif declared == "number":
        kind = "float"
        low = int(low) if isinstance(low, (int, float)) and float(low).is_integer() else None
    elif declared == "bool":
        kind, choices = "multiplechoice", list(BOOL_CHOICES)
    elif spec.get("choices"):
        kind, choices = "multiplechoice", [str(c) for c in spec["choices"]]
    else:
        kind = "text"
    stand_ins = list(spec.get("required_unless") or [])
    description = str(spec.get("description") or "").strip()
    if stand_ins:
        description += f" Required unless the inventory sets {' or '.join(stand_ins)}."
    item: dict = {
        "type": kind,
        "question_name": name,
        "question_description": description,
        "variable": name,
        "required": bool(spec.get("required")) and not stand_ins,
        "default": _default(kind, spec),
        "min": int(low) if isinstance(low, (int, float)) and not isinstance(low, bool) else None,
        "max": None,
    }
    if choices:
        item["choices"] = choices
        if item["default"] not in choices and item["default"] != "":
            raise ClusterSpecError(f"input {name!r}: its default {item['default']!r} is not one of its choices")
    return item


def survey_spec(playbook: str, description: str, declared: Mapping[str, Any]) -> dict:
    """The AWX survey spec of playbook ``ascend.cluster.<playbook>`` from its declared inputs, in declaration order."""
    if not declared:
        raise ClusterSpecError(f"{playbook}: no declared inputs, and AWX refuses a survey without questions")
    return {
        "name": f"ascend.cluster.{playbook}",
        "description": description,
        "spec": [question(str(name), spec) for name, spec in declared.items()],
    }


def survey_text(playbook: str, playbook_text: str) -> str:
    """The file ``surveys/<playbook>.json``: the spec as indented JSON with a final newline (the generator writes it, the
    unit test compares it byte for byte)."""
    declared, description = declared_inputs(playbook_text)
    return json.dumps(survey_spec(playbook, description, declared), indent=2, ensure_ascii=False) + "\n"
