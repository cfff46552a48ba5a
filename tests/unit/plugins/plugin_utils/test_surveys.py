"""AWX survey specs (surveys/<playbook>.json): generated from each playbook's declared inputs, valid as AWX checks a spec.

The rules checked here are AWX's own, from its source: ``JobTemplateSurveySpec._validate_spec_data``
(awx/api/views/__init__.py: name and description strings, a non-empty spec, each question's type, question_name,
variable and required, unique variables, a default of the type's Python type or "", min / max int or null, choices for
the choice types holding the default) and ``SurveyJobTemplateMixin._survey_element_validation`` (awx/main/models/mixins.py:
which defaults AWX passes to the playbook - a default that fails the question's own validation is left out).
"""

from __future__ import annotations

import json

import pytest

from ansible_collections.ascend.cluster.plugins.plugin_utils._errors import ClusterSpecError
from ansible_collections.ascend.cluster.plugins.plugin_utils._inputs import value_problem
from ansible_collections.ascend.cluster.plugins.plugin_utils._surveys import AWX_TYPES, declared_inputs, question, survey_spec
from hacking.generate_surveys import PLAYBOOKS, ROOT, rendered

PY_TYPES = {"text": str, "textarea": str, "password": str, "multiplechoice": str, "multiselect": str, "integer": int, "float": float}


def test_the_shipped_surveys_are_what_the_declarations_generate():
    for path, text in rendered().items():
        assert path.is_file(), f"{path.name} is missing: run hacking/generate_surveys.py"
        assert path.read_bytes() == text.encode(), f"{path.name} is out of date: run hacking/generate_surveys.py"
    assert sorted(p.name for p in (ROOT / "surveys").glob("*.json")) == sorted(f"{name}.json" for name in PLAYBOOKS)


def _awx_errors(spec: dict) -> list:
    """What AWX's POST check of a survey spec refuses (the rules of its _validate_spec_data)."""
    errors = []
    for field, kind in (("name", str), ("description", str), ("spec", list)):
        if not isinstance(spec.get(field), kind):
            errors.append(f"{field} missing or not a {kind.__name__}")
    if not spec.get("spec"):
        errors.append("spec has no items")
    seen: set = set()
    for item in spec.get("spec") or []:
        for field in ("type", "question_name", "variable"):
            if not isinstance(item.get(field), str):
                errors.append(f"{item}: {field} not a string")
        if not isinstance(item.get("required"), bool):
            errors.append(f"{item['variable']}: required not a bool")
        if item["variable"] in seen:
            errors.append(f"{item['variable']} duplicated")
        seen.add(item["variable"])
        if item["type"] not in AWX_TYPES:
            errors.append(f"{item['variable']}: type {item['type']}")
        elif item.get("default", "") != "" and not isinstance(item["default"], PY_TYPES[item["type"]]):
            errors.append(f"{item['variable']}: default {item['default']!r} is not a {item['type']}")
        for key in ("min", "max"):
            if item.get(key) is not None and not isinstance(item[key], int):
                errors.append(f"{item['variable']}: {key} not an int")
        if item["type"] in ("multiplechoice", "multiselect"):
            if "choices" not in item:
                errors.append(f"{item['variable']}: no choices")
            elif item.get("default", "") != "" and item["default"] not in item["choices"]:
                errors.append(f"{item['variable']}: default not among the choices")
    return errors


def _passed_by_awx(item: dict) -> bool:
    """Whether AWX puts the question's default into the job's extra vars (its _survey_element_validation passes it)."""
    default = item.get("default")
    if default is None:
        return False
    if item["type"] in ("text", "textarea", "password"):
        return isinstance(default, str)
    if item["type"] == "integer":
        return isinstance(default, int) and not isinstance(default, bool)
    if item["type"] == "float":
        return isinstance(default, (int, float)) and not isinstance(default, bool)
    return default in item["choices"]


@pytest.mark.parametrize("playbook", PLAYBOOKS)
def test_each_survey_is_one_awx_accepts_and_its_defaults_pass_the_playbooks_own_check(playbook):
    declared, _name = declared_inputs((ROOT / "playbooks" / f"{playbook}.yml").read_text())
    spec = json.loads((ROOT / "surveys" / f"{playbook}.json").read_text())
    assert _awx_errors(spec) == []
    assert [item["variable"] for item in spec["spec"]] == list(declared)
    for item in spec["spec"]:
        if _passed_by_awx(item):
            assert value_problem(item["variable"], declared[item["variable"]], item["default"]) is None, item


def test_each_declared_type_becomes_its_awx_question():
    declared = {
        "np": {"type": "int", "min": 1, "default": None, "description": "Number of NPUs."},
        "floor": {"type": "number", "min": 0, "default": 0, "description": "GB/s."},
        "wait": {"type": "bool", "default": True, "description": "Watch."},
        "framework": {"type": "str", "choices": ["mindspore", "pytorch"], "default": "mindspore"},
        "train_command": {"type": "command", "required": True, "required_unless": ["ascend_train_argv"], "description": "The command."},
        "job_id": {"type": "str", "default": "latest", "required": True},
        "progress_regex": {"type": "regex", "default": ""},
    }
    spec = survey_spec("train", "Launch", declared)
    assert spec["name"] == "ascend.cluster.train" and spec["description"] == "Launch"
    items = {item["variable"]: item for item in spec["spec"]}
    assert (items["np"]["type"], items["np"]["min"], items["np"]["default"]) == ("integer", 1, "")
    assert (items["floor"]["type"], items["floor"]["min"], items["floor"]["default"]) == ("float", 0, 0.0)
    assert isinstance(items["floor"]["default"], float)
    assert (items["wait"]["type"], items["wait"]["choices"], items["wait"]["default"]) == ("multiplechoice", ["true", "false"], "true")
    assert (items["framework"]["type"], items["framework"]["choices"]) == ("multiplechoice", ["mindspore", "pytorch"])
    # a stand-in (the inventory's ascend_train_argv) may give the command: AWX must not insist, the description says so
    assert (
        items["train_command"]["required"] is False
        and "unless the inventory sets ascend_train_argv" in items["train_command"]["question_description"]
    )
    assert items["job_id"]["required"] is True
    assert items["progress_regex"]["type"] == "text" and items["progress_regex"]["default"] == ""
    assert _awx_errors(spec) == []


def test_a_fractional_floor_is_no_awx_minimum_and_bad_declarations_are_refused():
    assert question("gbps", {"type": "number", "min": 0.5})["min"] is None
    with pytest.raises(ClusterSpecError, match="needs a type"):
        question("x", {"default": 1})
    with pytest.raises(ClusterSpecError, match="not one of its choices"):
        question("mode", {"type": "str", "choices": ["a", "b"], "default": "c"})
    with pytest.raises(ClusterSpecError, match="no declared inputs"):
        survey_spec("empty", "", {})
    with pytest.raises(ClusterSpecError, match="declares no ascend_playbook_inputs"):
        declared_inputs("- hosts: all\n  tasks: []\n")
