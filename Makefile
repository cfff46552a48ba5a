# ascend.cluster: the two commands users need are `make demo` and `make test`.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
PYTEST_ARGS ?=

.PHONY: all link venv torch-venv test test-python test-unit test-testbed sanity lint demo bench build clean
.PHONY: test-lane-newest

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

## make test: everything CI runs (python tests incl. the multi-host test bed, sanity, lint)
test: test-python sanity lint
test: test-lane-newest

## make test-python: all pytest suites (the test bed ones need root and netns)
test-python: $(STAMP) $(TORCH_STAMP)
	$(BIN)/python -m pytest $(PYTEST_ARGS)

## make test-unit: the fast suites only (no test bed)
test-unit: $(STAMP)
	$(BIN)/python -m pytest -m "not testbed" $(PYTEST_ARGS)

test-testbed: $(STAMP) $(TORCH_STAMP)
	$(BIN)/python -m pytest -m testbed $(PYTEST_ARGS)

sanity: $(STAMP)
	VENV_BIN=$(abspath $(BIN)) bash tests/sanity/run.sh

# This checkout is the collection: expose it as ansible_collections/ascend/cluster for the CLIs.
COLLECTIONS := $(abspath build/collections)
link: $(STAMP)
	$(BIN)/python -c 'import sys; sys.path.insert(0, "."); from tests.helpers.collection import ensure_collection_link as e; e()'

lint: link
	PATH=$(abspath $(BIN)):$$PATH ANSIBLE_COLLECTIONS_PATH=$(COLLECTIONS) $(BIN)/ansible-lint --offline --profile production

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
LANE_TESTS := tests/unit tests/simulator tests/integration

$(LANE_STAMP): requirements.txt tests/requirements.txt
	$(LANE_PYTHON) -m venv $(LANE_VENV)
	$(LANE_BIN)/pip install --quiet --disable-pip-version-check '$(LANE_CORE)' -r requirements.txt \
	    $$(grep -E '^pytest(-xdist)?[<>=!~ ]' tests/requirements.txt)
	touch $@

ifeq ($(strip $(LANE_PYTHON)),)
test-lane-newest:
	@echo "NOTICE: ansible-core 2.21 lane skipped: no Python 3.12/3.13 (neither python3.13/python3.12 on PATH nor under pyenv)"
else
test-lane-newest: $(LANE_STAMP) $(TORCH_STAMP)
	@echo "lane: $$($(LANE_BIN)/ansible --version | head -1), $$($(LANE_BIN)/python --version), ANSIBLE_INJECT_FACT_VARS=false"
	ANSIBLE_INJECT_FACT_VARS=false VENV_BIN=$(abspath $(LANE_BIN)) bash tests/sanity/run.sh
	ANSIBLE_INJECT_FACT_VARS=false $(LANE_BIN)/python -m pytest -n 2 $(PYTEST_ARGS) $(LANE_TESTS)
endif

build: $(STAMP)
	$(BIN)/ansible-galaxy collection build --force --output-path build/

clean:
	rm -rf build tests/output .pytest_cache
