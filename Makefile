# ascend.cluster: the two commands users need are `make demo` and `make test`.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
PYTEST_ARGS ?=

# Python keeps its bytecode (__pycache__, ignored by git and by the collection's build) even where the
# environment says not to: with PYTHONDONTWRITEBYTECODE set, every pytest process rewrote and compiled
# every test module again (~4 CPU-s per collection, one per xdist worker and lane) and every
# ansible-playbook run compiled the collection's plugins again.
unexport PYTHONDONTWRITEBYTECODE

.PHONY: all link venv torch-venv system-packages test test-python test-unit test-testbed sanity lint demo bench build clean
.PHONY: ruff mypy test-lane-newest

# pytest-xdist workers for the suites whose tests are independent (every simulated cluster and test bed
# has its own directory and prefix). More workers than the 2 cores pay off: playbook tests mostly wait.
# worksteal: an idle worker takes tests still queued on a busy one, so the slow playbook tests do not end
# the run on one worker alone (with the default scheduling the last ~10 min ran on one of four).
XDIST ?= 4
XDIST_ARGS := -n $(XDIST) --dist worksteal

all: test

$(STAMP): requirements.txt tests/requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check -r tests/requirements.txt
	touch $@

venv: $(STAMP)

## make torch-venv: PyTorch (CPU) for the stand-in training, on the system interpreter so that
## test-bed hosts (whose /root hides pyenv) can run it too. torch is pinned: an unpinned torch
## would pull a multi-GB CUDA build.
TORCH_VENV := build/torch-venv
TORCH_STAMP := $(TORCH_VENV)/.installed
$(TORCH_STAMP):
	/usr/bin/python3 -m venv $(TORCH_VENV)
	$(TORCH_VENV)/bin/pip install --quiet --disable-pip-version-check torch==2.13.0
	touch $@

torch-venv: $(TORCH_STAMP)

## Debian packages the test bed (sshd, ping, ufw) and sanity (shellcheck) need; the missing ones are
## installed quietly (as root), or make stops with one line naming the command to run.
DEBIAN_PACKAGES := openssh-server openssh-client iproute2 iputils-ping shellcheck ufw procps python3-venv libfaketime
system-packages:
	@bash tests/setup/debian-packages.sh $(DEBIAN_PACKAGES)

## make test: everything CI runs, set-up included (Debian packages, venvs): every test tier, sanity, lint.
## After the set-up, ruff and mypy, the long parts run side by side, TEST_JOBS at a time: the main lane's
## pytest, and beside it sanity, lint, docs-lint and the second lane, one after another: together they keep
## both cores busy from start to end (vmstat; pytest's own CPU count misses the test bed hosts' and the
## detached jobs' processes), so the run is as short as its CPU allows. Each part's output is printed
## whole when it ends (make --output-sync); a part that fails does not stop the others, and make test
## fails at the end.
TEST_JOBS ?= 2
test: system-packages ruff mypy
	@echo "make test: the main lane's pytest, and beside it sanity, lint, docs-lint and the ansible-core 2.21 lane ($(TEST_JOBS) at a time; each part's output is printed when it ends)"
	@$(MAKE) --no-print-directory --keep-going -j $(TEST_JOBS) --output-sync=target test-python sanity lint docs-lint test-lane-newest

## make test-python: every pytest tier (tests/unit, simulator, integration, testbed; the bed needs root)
test-python: $(STAMP) $(TORCH_STAMP) | system-packages
	$(BIN)/python -m pytest $(XDIST_ARGS) $(PYTEST_ARGS)

## make test-unit: tests/unit only (pure Python, seconds). Over the xdist workers too: a few of its tests
## wait on real processes (the supervisor's, the HCCL stand-in's timeouts), 31 s one after another, 11 s so.
test-unit: $(STAMP)
	$(BIN)/python -m pytest $(XDIST_ARGS) tests/unit $(PYTEST_ARGS)

test-testbed: $(STAMP) $(TORCH_STAMP) | system-packages
	$(BIN)/python -m pytest $(XDIST_ARGS) tests/testbed $(PYTEST_ARGS)

sanity: $(STAMP)
	VENV_BIN=$(abspath $(BIN)) bash tests/sanity/run.sh

# This checkout is the collection: expose it as ansible_collections/ascend/cluster for the CLIs.
COLLECTIONS := $(abspath build/collections)
link: $(STAMP)
	$(BIN)/python -c 'import sys; sys.path.insert(0, "."); from tests.helpers.collection import ensure_collection_link as e; e()'

## make ruff: lint and format check of all Python (config: ruff.toml)
ruff: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

## make mypy: type check of plugins/, the simulator, tests/ and bench/ (config: mypy.ini)
mypy: link
	$(BIN)/mypy

lint: link
	PATH=$(abspath $(BIN)):$$PATH ANSIBLE_COLLECTIONS_PATH=$(COLLECTIONS) $(BIN)/ansible-lint --offline --profile production

## make docs-lint: the collection's documentation as the docsite builds it (antsibull-docs), run
## from the ansible_collections/ascend/cluster link that `make link` makes; and the changelog
## fragments and changelogs/changelog.yaml as antsibull-changelog reads them.
.PHONY: docs-lint
docs-lint: link
	cd $(COLLECTIONS)/ansible_collections/ascend/cluster && PATH=$(abspath $(BIN)):$$PATH ANSIBLE_COLLECTIONS_PATH=$(COLLECTIONS) \
		$(abspath $(BIN))/antsibull-docs lint-collection-docs --plugin-docs .
	$(BIN)/antsibull-changelog lint

## make demo: the main job on a simulated 2 x 8 NPU cluster on this machine
demo: $(STAMP) $(TORCH_STAMP)
	PATH=$(abspath $(BIN)):$$PATH bash examples/sim/demo.sh

## make bench: every benchmark under bench/, one JSON object per line
bench: $(STAMP)
	@for b in bench/bench_*.py; do $(BIN)/python "$$b" || exit 1; done

## make test-lane-newest: the second lane, the newest ansible-core 2.21 on Python 3.13 (else 3.12),
## with injected fact variables off (the default from ansible-core 2.24): sanity, then the unit,
## simulator and simulated-cluster playbook tests. Its own venv; skipped with a NOTICE where the
## machine has neither interpreter (ansible-core 2.21 needs Python >= 3.12).
LANE_VENV ?= .venv-newest
LANE_BIN := $(LANE_VENV)/bin
LANE_STAMP := $(LANE_VENV)/.installed
LANE_CORE := ansible-core>=2.21,<2.22
# python3.13 / python3.12 on PATH (pyenv shims included), else pyenv's own install of it; the
# first that runs and has venv wins.
LANE_PYTHON ?= $(shell for v in 3.13 3.12; do \
    for p in $$(command -v python$$v) $${PYENV_ROOT:-$$HOME/.pyenv}/versions/$$v*/bin/python$$v; do \
        [ -x "$$p" ] && "$$p" -c 'import venv, ensurepip' 2>/dev/null && { echo "$$p"; exit 0; }; \
    done; done)
# What can differ between ansible-core versions, run once each on the newest: every filter, module, action
# and plugin_utils rule (tests/unit, all of it), and each playbook and role on the simulated cluster through
# the tests below - prepare (and its idempotent second run, check/diff), rank_table (910B and A3), train
# (success, fail-fast, stopped from elsewhere, Ctrl-C), smoke, the roles on their own, module_defaults,
# facts read with injection off, the deprecation guard. The variants of one behaviour (the same tasks
# played again with other inputs: AOE, chip gate, the layouts, the refusals) are controller
# logic the unit tier covers on both lanes; they run on the main lane only, to keep make test in minutes.
# A test renamed here fails the lane loudly (pytest: "not found").
IT := tests/integration
LANE_TESTS := tests/unit \
    $(IT)/test_deprecation_guard.py $(IT)/test_filters_in_playbook.py $(IT)/test_module_defaults.py \
    $(IT)/test_hccn_config.py::test_first_run_sets_second_run_changes_nothing $(IT)/test_hccn_config.py::test_check_mode_with_diff_changes_nothing \
    $(IT)/test_role_firewall.py \
    $(IT)/test_hccn_facts.py::test_configured_server $(IT)/test_hccn_facts.py::test_playbook_sets_facts \
    $(IT)/test_prepare.py::test_a_fresh_cluster_is_prepared_in_one_run_and_the_second_changes_nothing \
    $(IT)/test_prepare.py::test_check_diff_shows_the_planned_ips_and_changes_nothing \
    $(IT)/test_playbook_rank_table.py::test_sixteen_devices_make_one_table_on_every_server_and_a_second_run_changes_nothing \
    $(IT)/test_playbook_rank_table.py::test_a3_superpod_table_from_inventory_ids \
    $(IT)/test_role_device_ip.py::test_check_diff_changes_nothing \
    $(IT)/test_role_net_health.py::test_a_healthy_cluster_prints_one_table_and_changes_nothing \
    $(IT)/test_playbook_inputs.py::test_the_override_and_limit_select_the_hosts \
    $(IT)/test_launch_playbooks.py::test_np16_runs_every_rank_together_and_reports \
    $(IT)/test_launch_playbooks.py::test_one_failing_rank_stops_every_rank_and_is_named \
    $(IT)/test_launch_playbooks.py::test_stop_of_a_watched_job_fails_the_watching_play_naming_the_stop \
    $(IT)/test_launch_interrupt.py::test_ctrl_c_stops_every_rank_names_the_cause_and_a_new_train_starts_at_once \
    $(IT)/test_smoke.py::test_a_faulted_device_is_named_and_fails_the_run \
    $(IT)/test_launch_restarts.py::test_a_transient_rank_failure_restarts_in_place_and_the_job_succeeds \
    $(IT)/test_launch_spares.py::test_a_server_at_fault_is_left_out_and_the_spare_takes_its_place

# The lane's sanity checks what ansible-core loads and documents: the collection's plugins, roles, playbooks,
# meta, changelog and docs. The Python that ansible-core never loads (tests/, simulator/, bench/, examples/)
# gets the main lane's sanity; the lane runs its tests. Half the lane's sanity CPU (~36 of ~75 CPU-s).
LANE_SANITY_TARGETS := plugins/ roles/ playbooks/ meta/ changelogs/ docs/

$(LANE_STAMP): requirements.txt tests/requirements.txt
	$(LANE_PYTHON) -m venv $(LANE_VENV)
	$(LANE_BIN)/pip install --quiet --disable-pip-version-check '$(LANE_CORE)' -r requirements.txt \
	    $$(grep -E '^(pytest(-xdist)?|hypothesis|junitparser|markdown-it-py)[<>=!~ ]' tests/requirements.txt)
	touch $@

ifeq ($(strip $(LANE_PYTHON)),)
test-lane-newest:
	@echo "NOTICE: ansible-core 2.21 lane skipped: no Python 3.12/3.13 (neither python3.13/python3.12 on PATH nor under pyenv)"
else
test-lane-newest: $(LANE_STAMP) $(TORCH_STAMP)
	@echo "lane: ansible-core $$($(LANE_BIN)/python -c 'from ansible.release import __version__ as v; print(v)'), $$($(LANE_BIN)/python --version), ANSIBLE_INJECT_FACT_VARS=false"
	ANSIBLE_INJECT_FACT_VARS=false VENV_BIN=$(abspath $(LANE_BIN)) bash tests/sanity/run.sh $(LANE_SANITY_TARGETS)
	ANSIBLE_INJECT_FACT_VARS=false $(LANE_BIN)/python -m pytest $(XDIST_ARGS) $(PYTEST_ARGS) $(LANE_TESTS)
endif

build: $(STAMP)
	$(BIN)/ansible-galaxy collection build --force --output-path build/

clean:
	rm -rf build tests/output .pytest_cache
