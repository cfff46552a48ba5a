"""Each training module's documentation (with its doc fragments) says what its argument spec does.

ansible-test sanity (validate-modules) checks the same; this is the fast check, and the one that
guards training_watch, whose action plugin validates against the spec its module declares.
"""

from __future__ import annotations

import importlib

import pytest
import yaml

PACKAGE = "ansible_collections.ascend.cluster.plugins"
MODULES = ["training_job", "training_rank", "training_ranks", "training_results", "training_watch"]


def documented_options(module: object) -> dict:
    docs = yaml.safe_load(module.DOCUMENTATION)  # type: ignore[attr-defined]
    own = dict(docs.get("options") or {})
    found = dict(own)
    for name in docs.get("extends_documentation_fragment") or []:
        fragment, _dot, part = name.split(".", 2)[-1].partition(".")
        cls = importlib.import_module(f"{PACKAGE}.doc_fragments.{fragment}").ModuleDocFragment
        for option, doc in yaml.safe_load(getattr(cls, part.upper() or "DOCUMENTATION"))["options"].items():
            # as Ansible merges them (utils/plugin_docs.merge_fragment): the module's own keys win over the fragment's
            found[option] = dict(doc, **own.get(option, {}))
    return found


@pytest.mark.parametrize("name", MODULES)
def test_docs_match_the_argument_spec(name):
    module = importlib.import_module(f"{PACKAGE}.modules.{name}")
    docs = documented_options(module)
    assert sorted(docs) == sorted(module.ARGS)
    for option, spec in module.ARGS.items():
        doc = docs[option]
        said = (doc.get("type", "str"), doc.get("default"), bool(doc.get("required")), doc.get("choices"))
        assert said == (spec.get("type", "str"), spec.get("default"), bool(spec.get("required")), spec.get("choices")), option


def test_the_watch_action_validates_against_the_module_spec():
    from ansible_collections.ascend.cluster.plugins.action import training_watch as action
    from ansible_collections.ascend.cluster.plugins.modules import training_watch as module

    assert action.ARGS is module.ARGS
    assert module.ARGS["progress_interval"]["default"] == 10.0
