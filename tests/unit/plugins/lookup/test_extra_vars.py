"""Lookup ascend.cluster.extra_vars: the names given with -e, read where ansible-playbook read them."""

from __future__ import annotations

import pytest
from ansible import context
from ansible.parsing.dataloader import DataLoader
from ansible.utils import vars as ansible_vars

from ansible_collections.ascend.cluster.plugins.lookup.extra_vars import LookupModule


@pytest.fixture
def cli_args(monkeypatch):
    def give(*extra_vars):
        monkeypatch.setattr(context, "CLIARGS", context.CLIArgs({"extra_vars": extra_vars}))
        monkeypatch.setattr(ansible_vars.load_extra_vars, "extra_vars", None, raising=False)

    yield give
    setattr(ansible_vars.load_extra_vars, "extra_vars", None)  # noqa: B010 - the cache attribute mypy does not know


def test_every_form_of_e_gives_its_names(cli_args, tmp_path):
    vars_file = tmp_path / "vars.yml"
    vars_file.write_text("wait: false\n")
    cli_args("nps=16 framework=pytorch", '{"train_command": "bash x.sh"}', f"@{vars_file}")
    assert LookupModule(loader=DataLoader()).run([]) == ["framework", "nps", "train_command", "wait"]


def test_no_e_gives_no_names(cli_args):
    cli_args()
    assert LookupModule(loader=DataLoader()).run([]) == []
