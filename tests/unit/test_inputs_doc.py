"""docs/inputs.md lists exactly what the playbooks declare as their -e inputs (ascend_playbook_inputs).

Regenerate its tables with ``.venv/bin/python -m tests.unit.test_inputs_doc``.
"""

from __future__ import annotations

import yaml

from tests.helpers.collection import REPO_ROOT, install_import_path

install_import_path()

from ansible_collections.ascend.cluster.plugins.plugin_utils._inputs import inputs_markdown  # noqa: E402 - importable once installed

PLAYBOOKS = ("train", "smoke", "rank_table", "prepare", "status", "stop", "diagnose", "collect")
SIM_PLAYBOOKS = ("sim_cluster",)  # controller only: no ascend_hosts
DOC = REPO_ROOT / "docs" / "inputs.md"
BEGIN = "<!-- BEGIN generated from each playbook's ascend_playbook_inputs (python -m tests.unit.test_inputs_doc) -->"
END = "<!-- END generated -->"


def declared(playbook: str) -> dict:
    first = yaml.safe_load((REPO_ROOT / "playbooks" / f"{playbook}.yml").read_text())[0]
    imported = [t.get("ansible.builtin.import_role") or {} for t in first["tasks"]]
    assert [i.get("name") for i in imported] == ["ascend.cluster.playbook_inputs"], f"{playbook}: the first play checks the inputs"
    # checked once by the role's first task (role_inputs), not by Ansible's check on every host of the play
    assert imported[0].get("rolespec_validate") is False, playbook
    assert first["hosts"] == "all:localhost"
    return first["vars"]["ascend_playbook_inputs"]


def render() -> str:
    parts = [BEGIN]
    for playbook in PLAYBOOKS + SIM_PLAYBOOKS:
        parts += ["", f"### `ascend.cluster.{playbook}`", "", inputs_markdown(declared(playbook)).rstrip("\n")]
    return "\n".join([*parts, "", END])


def test_every_playbook_declares_ascend_hosts():
    for playbook in PLAYBOOKS:
        assert "ascend_hosts" in declared(playbook), playbook


def test_the_doc_lists_what_the_playbooks_declare():
    text = DOC.read_text()
    assert BEGIN in text and END in text
    block = text[text.index(BEGIN) : text.index(END) + len(END)]
    assert block == render(), "docs/inputs.md is out of date: run .venv/bin/python -m tests.unit.test_inputs_doc"


if __name__ == "__main__":
    text = DOC.read_text()
    DOC.write_text(text[: text.index(BEGIN)] + render() + text[text.index(END) + len(END) :])
