"""The job records' and device locks' directories have one default each.

The modules' is ``module_utils/_options.py`` (``DEFAULT_JOB_ROOT``, ``DEFAULT_LOCK_DIR``; their arg specs read it,
and their doc fragment states it, which ansible-test sanity holds equal). The launch role's is its
``defaults/main.yml``, which its argument spec states once (one YAML anchor for every entry point). The
rank_table role and prepare.yml leave the variables unset to the modules, so the two must be one directory.
"""

from __future__ import annotations

import pytest
import yaml

from ansible_collections.ascend.cluster.plugins.doc_fragments.jobs import ModuleDocFragment
from ansible_collections.ascend.cluster.plugins.module_utils import _options
from tests.helpers.collection import REPO_ROOT

ROLE = REPO_ROOT / "roles" / "launch_training"
CASES = [
    ("ascend_launch_job_root", _options.DEFAULT_JOB_ROOT, "job_root"),
    ("ascend_launch_lock_dir", _options.DEFAULT_LOCK_DIR, "lock_dir"),
]


@pytest.mark.parametrize(("variable", "module_default", "option"), CASES)
def test_the_role_and_the_modules_default_to_one_directory(variable, module_default, option):
    assert yaml.safe_load((ROLE / "defaults" / "main.yml").read_text())[variable] == module_default
    fragment = ModuleDocFragment.DOCUMENTATION if option == "job_root" else ModuleDocFragment.LOCK_DIR
    assert yaml.safe_load(fragment)["options"][option]["default"] == module_default
    assert getattr(_options, option.upper()) == {option: {"type": "path", "default": module_default}}


@pytest.mark.parametrize(("variable", "module_default", "option"), CASES)
def test_the_argument_spec_states_the_default_once(variable, module_default, option):
    text = (ROLE / "meta" / "argument_specs.yml").read_text()
    assert text.count(module_default) == 1, f"{variable}'s default is written more than once: use its anchor"
    specs = yaml.safe_load(text)["argument_specs"]
    stated = {entry: spec["options"][variable].get("default") for entry, spec in specs.items() if variable in spec.get("options", {})}
    assert set(stated.values()) == {module_default}, stated
