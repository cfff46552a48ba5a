# ascend.cluster: the two commands users need are `make demo` and `make test`.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
PYTEST_ARGS ?=

.PHONY: all link venv torch-venv test test-python test-unit test-testbed sanity lint demo bench build clean

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
test: test-python sanity lint docs-lint

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

## make docs-lint: the collection's documentation as the docsite builds it (antsibull-docs), run
## from the ansible_collections/ascend/cluster link that `make link` makes.
.PHONY: docs-lint
docs-lint: link
	cd $(COLLECTIONS)/ansible_collections/ascend/cluster && PATH=$(abspath $(BIN)):$$PATH ANSIBLE_COLLECTIONS_PATH=$(COLLECTIONS) \
		$(abspath $(BIN))/antsibull-docs lint-collection-docs --plugin-docs .

## make demo: the main job on a simulated 2 x 8 NPU cluster on this machine
demo: $(STAMP) $(TORCH_STAMP)
	PATH=$(abspath $(BIN)):$$PATH bash examples/sim/demo.sh

## make bench: every benchmark under bench/, one JSON object per line
bench: $(STAMP)
	@for b in bench/bench_*.py; do $(BIN)/python "$$b" || exit 1; done

build: $(STAMP)
	$(BIN)/ansible-galaxy collection build --force --output-path build/

clean:
	rm -rf build tests/output .pytest_cache
