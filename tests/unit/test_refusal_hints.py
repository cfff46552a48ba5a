"""Every refusal's hint names an input that the playbooks which can print it accept (issue 25 item 3).

The 910A refusal told the operator to set ``allow_partial_servers=true``, which train.yml then refused
("unknown extra var 'allow_partial_servers': did you mean allow_partial?"). This test follows every hint:

1. it collects the messages of the collection - the string literals of ``plugins/`` (docstrings and the
   DOCUMENTATION / EXAMPLES / RETURN blocks left out) and the ``msg`` / ``fail_msg`` of the roles' and
   playbooks' tasks - and in them each input named as ``-e name`` or ``name=value``;
2. it finds the playbooks that can print each message: the playbook's own file, the task files it imports, the
   roles it runs (and theirs), the collection's modules, filters and lookups those use, the action plugins of
   those modules and every ``module_utils`` / ``plugin_utils`` file they import;
3. each named input must be one the playbook accepts: one of its declared ``-e`` inputs, or a variable of a
   role it runs (``meta/argument_specs.yml``, which ``ascend.cluster.role_inputs`` checks), that the playbook's
   input check does not refuse as a typo.

Where a message can be reached from a playbook only on a path that playbook never takes, ``UNREACHABLE`` says
so, with the reason; an entry that is no longer needed fails the test too.
"""

from __future__ import annotations

import ast
import re
from functools import lru_cache
from pathlib import Path
from typing import Iterator, NamedTuple, Union

import pytest
import yaml

from tests.helpers.collection import REPO_ROOT, install_import_path

install_import_path()

from ansible_collections.ascend.cluster.plugins.plugin_utils._inputs import input_problems  # noqa: E402 - importable once installed

PLUGINS = REPO_ROOT / "plugins"
ROLES = REPO_ROOT / "roles"
PLAYBOOKS_DIR = REPO_ROOT / "playbooks"
PLAYBOOKS = ("train", "smoke", "rank_table", "prepare", "status", "stop", "diagnose", "sim_cluster")
COLLECTION = "ascend.cluster."

# An input named in a message: "-e name" (the word after -e), or "name=value" with a plain value (not "--opt=3",
# not "rc=%s"). Jinja in a task's msg names no input this way.
NAMED = re.compile(r"-e\s+['\"]?([a-z][a-z0-9_]*)|(?<![-\w.])([a-z][a-z0-9_]*)=(?:true|false|yes|no|none|[0-9]+|[a-z][a-z0-9_]*)\b")
# A module's or filter's option with the role variable that sets it beside it, as the collection writes them:
# "use mode=disable (role: ascend_firewall_mode=disable)". Either one accepted is enough.
ROLE_ALTERNATIVE = re.compile(r"([a-z][a-z0-9_]*)=\S+ \(role: ([a-z][a-z0-9_]*)=")
NOT_MESSAGES = ("DOCUMENTATION", "EXAMPLES", "RETURN")

_AOE = "AOE tuning is train.yml's (-e aoe, use_library, launcher): smoke.yml maps none of them and runs no tuning"
_DIAGNOSE_FIREWALL = "the diagnosis reads the firewall in check mode with failed_when: false: its refusals are never printed"
_LAUNCHES = "printed by a launch only: status.yml, stop.yml and diagnose.yml start nothing"
_PREFLIGHT = (
    "the launch's pre-flight (_job_preflight.run, training_job state=preflight): rank_table.yml and prepare.yml only ask "
    "its find_busy, through rank_table_file, whether a job of ours holds a device"
)
# (source file, an input its messages name): the playbooks that reach the file but never print such a message there, and why.
UNREACHABLE: dict[tuple[str, str], tuple[frozenset[str], str]] = {
    ("plugins/plugin_utils/_rank/chip_rules.py", "allow_partial_servers"): (
        frozenset(("train", "smoke", "rank_table", "prepare", "status")),
        "the rank_table and select_devices filters' own option: the rank_table role's refusal (rank_plan) names "
        "ascend_rank_table_allow_partial_910a=true instead (test_a_910a_refusal_names_the_roles_variable_not_the_filters_option); "
        "status.yml reaches it only through job_summary's import of _restart, whose device selection runs for a "
        "restart's decision alone (it catches the refusal)",
    ),
    ("plugins/module_utils/_job/command.py", "train_command"): (
        frozenset(("smoke", "rank_table", "prepare", "status", "stop", "diagnose", "sim_cluster")),
        "the check of a command-typed -e input, which only train.yml declares (smoke.yml's launch passes an argument list)",
    ),
    ("plugins/module_utils/_job/launcher.py", "launcher"): (
        frozenset(("smoke", "status", "stop", "diagnose")),
        "a per-node launcher's refusals: only train.yml sets one (-e launcher); " + _LAUNCHES,
    ),
    ("plugins/module_utils/_job/stage.py", "launcher"): (
        frozenset(("smoke", "status", "stop", "diagnose")),
        "an AOE tuning run under a per-node launcher: only train.yml sets either; " + _LAUNCHES,
    ),
    ("plugins/module_utils/_job/preflight.py", "kill_stale"): (frozenset(("rank_table", "prepare")), _PREFLIGHT),
    ("plugins/plugin_utils/_net/ip_plan.py", "netdetect"): (
        frozenset(("smoke",)),
        "device_ip_plan's refusals: smoke.yml checks the device IPs against the layout rules, it computes no plan",
    ),
    ("plugins/plugin_utils/_launch/aoe.py", "use_library"): (frozenset(("smoke",)), _AOE),
    ("plugins/plugin_utils/_launch/checks.py", "aoe"): (frozenset(("smoke",)), _AOE),
    ("plugins/plugin_utils/_launch/checks.py", "use_library"): (frozenset(("smoke",)), _AOE),
    ("plugins/plugin_utils/_launch/checks.py", "launcher"): (frozenset(("smoke",)), _AOE),
    ("roles/launch_training/tasks/aoe_distribute.yml", "aoe"): (frozenset(("smoke",)), _AOE),
    ("roles/launch_training/tasks/aoe_distribute.yml", "use_library"): (frozenset(("smoke",)), _AOE),
    ("roles/launch_training/tasks/failed.yml", "aoe"): (frozenset(("smoke",)), _AOE),
    ("plugins/module_utils/_host/firewall.py", "ascend_firewall_mode"): (frozenset(("train", "smoke", "diagnose")), _DIAGNOSE_FIREWALL),
    ("plugins/module_utils/_host/firewall.py", "mode"): (frozenset(("train", "smoke", "diagnose")), _DIAGNOSE_FIREWALL),
    ("plugins/module_utils/_host/firewall.py", "reserve_hccl_ports"): (frozenset(("train", "smoke", "diagnose")), _DIAGNOSE_FIREWALL),
    ("plugins/plugin_utils/_net/firewall_guard.py", "ascend_firewall_mode"): (
        frozenset(("train", "smoke", "diagnose")),
        _DIAGNOSE_FIREWALL,
    ),
    ("plugins/plugin_utils/_net/firewall_guard.py", "ascend_firewall_allow_local"): (
        frozenset(("train", "smoke", "diagnose")),
        _DIAGNOSE_FIREWALL,
    ),
}


def named_inputs(text: str) -> list[tuple[str, ...]]:
    """The inputs ``text`` names, each as its alternatives (an option and the role variable beside it)."""
    names = sorted({a or b for a, b in NAMED.findall(text)})
    pairs = dict(ROLE_ALTERNATIVE.findall(text))
    return [(name, pairs[name]) if name in pairs else (name,) for name in names if name not in pairs.values()]


class FilterFunction(NamedTuple):
    """One filter of a filter file that holds several: what it runs is what its own function imports and says."""

    path: Path
    name: str


Source = Union[Path, FilterFunction]


@lru_cache(maxsize=None)
def python_tree(source: Source) -> ast.AST:
    """A Python file's tree, or a filter's own function in it."""
    if isinstance(source, FilterFunction):
        tree = ast.parse(source.path.read_text())
        return next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == source.name)
    return ast.parse(source.read_text())


def registered(path: Path) -> list[str]:
    """The functions a filter file registers (its ``FILTERS``; each under its own name)."""
    found = re.search(r"^FILTERS = \(([^)]*)\)", path.read_text(), re.M)
    return [name.strip() for name in found.group(1).split(",") if name.strip()] if found else []


def filter_functions(path: Path) -> list[FilterFunction]:
    """The filters a filter file registers, each by the function that answers to it."""
    return [FilterFunction(path, function) for function in registered(path)]


def python_messages(source: Source) -> Iterator[str]:
    """The string literals of one Python file (or filter) that may reach an operator (f-strings with {} for their fields)."""
    tree = python_tree(source)
    skip: set[int] = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and body:
            first = body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                skip.add(id(first.value))
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id in NOT_MESSAGES for t in node.targets):
            skip.update(id(sub) for sub in ast.walk(node.value))
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr) and id(node) not in skip:
            skip.update(id(part) for part in node.values)
            yield "".join(str(part.value) if isinstance(part, ast.Constant) else "{}" for part in node.values)
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip:
            yield node.value


def yaml_messages(path: Path) -> Iterator[str]:
    """Every ``msg`` / ``fail_msg`` of a task file or playbook."""

    def walk(node: object) -> Iterator[str]:
        if isinstance(node, dict):
            for key, value in node.items():
                if key in ("msg", "fail_msg") and isinstance(value, str):
                    yield value
                else:
                    yield from walk(value)
        elif isinstance(node, list):
            for item in node:
                yield from walk(item)

    yield from walk(yaml.safe_load(path.read_text()))


def messages(source: Source) -> Iterator[str]:
    return python_messages(source) if isinstance(source, FilterFunction) or source.suffix == ".py" else yaml_messages(source)


@lru_cache(maxsize=None)
def plugin_files() -> dict[str, list[Source]]:
    """``ascend.cluster.<name>`` -> the plugin files that answer to it (module, its action, lookup; a filter's function)."""
    found: dict[str, list[Source]] = {}
    for kind in ("modules", "action", "lookup"):
        for path in (PLUGINS / kind).glob("*.py"):
            found.setdefault(path.stem, []).append(path)
    for path in (PLUGINS / "filter").glob("*.py"):
        for function in registered(path):
            found.setdefault(function, []).append(FilterFunction(path, function))
    return found


def imported_utils(source: Source) -> list[Source]:
    """The collection's module_utils / plugin_utils files one Python file (or filter) imports (at the top or inside a function)."""
    out: list[Source] = []
    for node in ast.walk(python_tree(source)):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("ansible_collections.ascend.cluster.plugins."):
            package = node.module.split(".")[4:]
            # a module (``from ..._rank.plan import x``), or modules of a package (``from ..._rank import plan``)
            names = [[*package, alias.name] for alias in node.names] if PLUGINS.joinpath(*package).is_dir() else [package]
            for parts in names:
                candidate = PLUGINS.joinpath(*parts).with_suffix(".py")
                if candidate.exists():
                    out.append(candidate)
    return out


REF = re.compile(r"ascend\.cluster\.(\w+)")
# A filter or lookup of the collection used in a template or a condition.
JINJA_REF = re.compile(r"(?:\|\s*|(?:lookup|query)\(\s*['\"])ascend\.cluster\.(\w+)")


@lru_cache(maxsize=None)
def python_uses(source: Source) -> list[Source]:
    """What one Python file (or filter) runs: the utils it imports and the modules it names (an action's _execute_module)."""
    named = {name for text in python_messages(source) for name in REF.findall(text)}
    return imported_utils(source) + [found for name in sorted(named) for found in plugin_files().get(name, [])]


def role_files(role: str, tasks_from: str = "main.yml") -> list[Path]:
    base = ROLES / role
    return [base / "tasks" / tasks_from, *(p for p in (base / "defaults" / "main.yml", base / "vars" / "main.yml") if p.exists())] + [
        base / "meta" / "argument_specs.yml"
    ]


@lru_cache(maxsize=None)
def yaml_uses(path: Path) -> list[Source]:
    """What one task file or playbook runs: task files, roles, and the collection's modules, filters and lookups."""
    out: list[Source] = []
    in_role_tasks = path.parent.name == "tasks" and path.parent.parent.parent == ROLES

    def walk(node: object, key: object = None) -> None:
        if isinstance(node, dict):
            role = node.get("ansible.builtin.import_role") or node.get("ansible.builtin.include_role")
            if isinstance(role, dict) and str(role.get("name", "")).startswith(COLLECTION):
                out.extend(role_files(role["name"][len(COLLECTION) :], role.get("tasks_from", "main.yml")))
            for name in ("ansible.builtin.import_tasks", "ansible.builtin.include_tasks"):
                if isinstance(node.get(name), str):
                    # a templated include (launch_training's restart: members.yml or attempt.yml) may run either file
                    files = re.findall(r"'([\w.-]+\.yml)'", node[name]) if "{{" in node[name] else [node[name]]
                    # as Ansible finds it: beside the including file first (a role's tasks, playbooks/tasks/), else the playbook's
                    out.extend((path.parent if in_role_tasks or (path.parent / file).exists() else PLAYBOOKS_DIR) / file for file in files)
            for sub_key, value in node.items():
                if sub_key == "module_defaults":
                    continue
                if isinstance(sub_key, str) and sub_key.startswith(COLLECTION):
                    out.extend(plugin_files().get(sub_key[len(COLLECTION) :], []))
                walk(value, sub_key)
        elif isinstance(node, list):
            for item in node:
                role = item if isinstance(item, str) else item.get("role") if isinstance(item, dict) else None
                if key == "roles" and str(role).startswith(COLLECTION):  # a play's roles (not role_inputs' option)
                    out.extend(role_files(str(role)[len(COLLECTION) :]))
                else:
                    walk(item)
        elif isinstance(node, str):
            for name in JINJA_REF.findall(node):
                out.extend(plugin_files().get(name, []))

    if path.name != "argument_specs.yml":  # read for the role's variables; its descriptions run nothing
        walk(yaml.safe_load(path.read_text()))
    return out


@lru_cache(maxsize=None)
def closure(playbook: str) -> frozenset[Source]:
    """Every file (or filter) whose messages ``playbook`` can print (see the module docstring)."""
    seen: set[Source] = set()
    todo: list[Source] = [PLAYBOOKS_DIR / f"{playbook}.yml"]
    while todo:
        source = todo.pop()
        if source in seen:
            continue
        seen.add(source)
        todo += python_uses(source) if isinstance(source, FilterFunction) or source.suffix == ".py" else yaml_uses(source)
    return frozenset(seen)


@lru_cache(maxsize=None)
def role_variables(playbook: str) -> frozenset[str]:
    names: set[str] = set()
    for spec in ROLES.glob("*/meta/argument_specs.yml"):
        if spec in closure(playbook):
            for entry in yaml.safe_load(spec.read_text())["argument_specs"].values():
                names.update(entry.get("options") or {})
    return frozenset(names)


@lru_cache(maxsize=None)
def declared(playbook: str) -> dict:
    return yaml.safe_load((PLAYBOOKS_DIR / f"{playbook}.yml").read_text())[0]["vars"]["ascend_playbook_inputs"]


@lru_cache(maxsize=None)
def refusal(playbook: str, name: str) -> str | None:
    """Why ``playbook`` does not take ``-e name``; None when it does."""
    inputs = declared(playbook)
    typo = [p for p in input_problems({name: None}, inputs) if p.startswith((f"unknown extra var {name!r}", f"{name}="))]
    if typo:
        return typo[0]
    if name not in inputs and name not in role_variables(playbook):
        return f"{name} is neither an input of {playbook}.yml nor a variable of a role it runs"
    return None


@lru_cache(maxsize=None)
def all_hints() -> tuple[tuple[str, str, tuple[str, ...], str], ...]:
    return tuple(hints())


def hints() -> Iterator[tuple[str, str, tuple[str, ...], str]]:
    """``(source file, message, input and its alternatives, playbook)`` for every input a message names and every
    playbook that can print it."""
    files = sorted(PLUGINS.glob("*/**/*.py")) + sorted(ROLES.glob("*/tasks/*.yml")) + sorted(PLAYBOOKS_DIR.glob("**/*.yml"))
    # a filter file's messages, filter by filter: a playbook prints only those of the filters it uses
    sources: list[Source] = [f for path in files for f in (filter_functions(path) if path.parent.name == "filter" else [path])]
    for source in sources:
        path = source.path if isinstance(source, FilterFunction) else source
        for message in messages(source):
            for names in named_inputs(message):
                for playbook in PLAYBOOKS:
                    if source in closure(playbook):
                        yield str(path.relative_to(REPO_ROOT)), message, names, playbook


def test_the_collector_finds_the_hints_it_is_meant_to_follow():
    found = {(source, names[0], playbook) for source, _message, names, playbook in all_hints()}
    assert ("playbooks/tasks/servers_reached.yml", "allow_partial", "prepare") in found
    assert ("plugins/plugin_utils/_rank/plan.py", "ascend_rank_table_allow_partial_910a", "train") in found
    assert ("plugins/plugin_utils/_launch/clock.py", "ascend_launch_allow_clock_skew", "train") in found
    assert ("plugins/module_utils/_host/firewall.py", "reserve_hccl_ports", "prepare") in found
    assert not any(name in ("max_restarts", "rc") for _source, name, _playbook in found)
    assert ("plugins/plugin_utils/_launch/checks.py", "aoe", "prepare") not in found  # prepare launches nothing


def test_every_hint_names_an_input_the_playbook_accepts():
    wrong = []
    used = set()
    for source, message, names, playbook in all_hints():
        why = [refusal(playbook, name) for name in names]
        if None in why:
            continue
        skipped, _reason = UNREACHABLE.get((source, names[0]), (frozenset(), ""))
        if playbook in skipped:
            used.add((source, names[0], playbook))
            continue
        wrong.append(f"{source}: {playbook}.yml can print {message!r}, but -e {' or '.join(names)}: {'; '.join(map(str, why))}")
    assert not wrong, "\n".join(wrong)
    listed = {(source, name, playbook) for (source, name), (playbooks, _reason) in UNREACHABLE.items() for playbook in playbooks}
    assert listed == used, f"UNREACHABLE lists what no longer needs it: {sorted(listed - used)}"


def test_the_allow_partial_servers_hint_is_accepted_where_the_rank_table_role_runs():
    """The 910A hint's variable, through each playbook that builds a rank table (issue 25 item 3)."""
    from ansible_collections.ascend.cluster.plugins.plugin_utils._rank.plan import PARTIAL_SERVERS_VAR

    name = PARTIAL_SERVERS_VAR.partition("=")[0]
    assert {playbook: refusal(playbook, name) for playbook in ("train", "smoke", "rank_table", "prepare")} == dict.fromkeys(
        ("train", "smoke", "rank_table", "prepare")
    )
    assert refusal("train", "allow_partial_servers") == "unknown extra var 'allow_partial_servers': did you mean allow_partial?"


@pytest.mark.parametrize(
    "text, names",
    [
        ("set allow_partial_servers=true if your CANN allows it", [("allow_partial_servers",)]),
        ("or with -e allow_partial=true.", [("allow_partial",)]),
        ("with -e 'train_command=\"bash x.sh\"'", [("train_command",)]),
        ("use mode=disable (role: ascend_firewall_mode=disable)", [("mode", "ascend_firewall_mode")]),
        ("--max-restarts=0 (rc=%s) HCCL_CONNECT_TIMEOUT=120s {{ x | default(y, true) }}", []),
    ],
)
def test_what_counts_as_a_named_input(text, names):
    assert named_inputs(text) == names
