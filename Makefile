# kmock developer tasks (GNU make). `make` alone lists the targets.

.DEFAULT_GOAL := help
SHELL := /bin/bash

PYTHON ?= python3
VENV ?= .venv
VENV_STAMP := $(VENV)/.installed-stamp
BENCH_STAMP := $(VENV)/.bench-installed-stamp
EXTRAS ?= test,pipeline,dev

LISTENERS ?= PLAINTEXT://127.0.0.1:9092
LOG_DIRS ?= ./data
# A guard against a hung run, not the target: the suite takes about 8-12 minutes on 2 cores.
TEST_BUDGET ?= 2700
PYTEST_ARGS ?=
CYCLES ?= 100
# make reliability: frames of the live fuzz, minutes of the soak, examples per decoder
# property (hypothesis), seconds of coverage-guided decoder fuzzing (atheris).
FUZZ_FRAMES ?= 1000000
SOAK_MINUTES ?= 30
FUZZ_EXAMPLES ?= 300
ATHERIS_SECONDS ?= 300

JS_DIR := tests/integration/js
JS_STAMP := $(JS_DIR)/node_modules/.installed-stamp
CONSOLE_DIR := tests/integration/console
CONSOLE_STAMP := $(CONSOLE_DIR)/node_modules/.installed-stamp
SARAMA_DIR := tests/integration/sarama
SARAMA_BIN := $(SARAMA_DIR)/sarama-check
# Debian's golang-github-shopify-sarama-dev ships sarama 1.22.1 and its dependencies as Go
# source under /usr/share/gocode. GOPATH mode builds against that tree with no network;
# module mode cannot (those packages carry no go.mod).
SARAMA_GOPATH ?= /usr/share/gocode
SARAMA_ENV := GO111MODULE=off GOPATH=$(SARAMA_GOPATH) GOFLAGS= GOPROXY=off \
	CGO_CFLAGS=-Wno-deprecated-declarations

.PHONY: help venv system-deps node-deps sarama run test test-fast integration lint fmt \
	bench reliability clean distclean

help: ## List the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  %-13s %s\n", $$1, $$2}' \
		$(MAKEFILE_LIST)

venv: $(VENV_STAMP) ## Create .venv, pip install -e '.[test,pipeline,dev]' (again only if pyproject changes)

$(VENV_STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' \
		|| { echo "kmock needs Python >= 3.11; $(PYTHON) is $$($(PYTHON) -V 2>&1)" >&2; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install --quiet --upgrade pip
	@echo "installing kmock[$(EXTRAS)] into $(VENV) (pyspark is a 456 MB sdist: ~1 min cold)"
	$(VENV)/bin/python -m pip install --quiet -e '.[$(EXTRAS)]'
	@# Byte-compile our own sources too: an editable install leaves that to the first import,
	@# which never happens where PYTHONDONTWRITEBYTECODE is set, and then every start
	@# recompiles everything (about twice the start-up time). Stale .pyc files are ignored.
	$(VENV)/bin/python -m compileall -q protocol coordinator storage schemas broker pipeline client cli >/dev/null
	touch $@

system-deps: ## Install kcat, java, go + sarama source, node, chromium (Debian; skips what is there)
	@scripts/install-system-deps.sh

node-deps: $(JS_STAMP) $(CONSOLE_STAMP) ## Install kafkajs and playwright-core from their package-lock.json (npm ci)

$(JS_STAMP): $(JS_DIR)/package.json $(JS_DIR)/package-lock.json | system-deps
	@if command -v npm >/dev/null 2>&1; then \
		cd $(JS_DIR) && npm ci --no-audit --no-fund --loglevel=error && touch $(CURDIR)/$@; \
	else \
		echo "node-deps: npm not found, kafkajs not installed (see make system-deps)" >&2; \
	fi

# playwright-core drives Debian's chromium (make system-deps); it downloads no browser.
$(CONSOLE_STAMP): $(CONSOLE_DIR)/package.json $(CONSOLE_DIR)/package-lock.json | system-deps
	@if command -v npm >/dev/null 2>&1; then \
		cd $(CONSOLE_DIR) && npm ci --no-audit --no-fund --loglevel=error && touch $(CURDIR)/$@; \
	else \
		echo "node-deps: npm not found, playwright-core not installed (see make system-deps)" >&2; \
	fi

sarama: $(SARAMA_BIN) ## Build the sarama-check client from Debian's Go packages, offline

$(SARAMA_BIN): $(SARAMA_DIR)/main.go | system-deps
	@if command -v go >/dev/null 2>&1 && [ -d $(SARAMA_GOPATH)/src/github.com/Shopify/sarama ]; then \
		cd $(SARAMA_DIR) && $(SARAMA_ENV) go build -o sarama-check . && echo "built $@"; \
	else \
		echo "sarama: go or Debian's sarama source missing, not built (see make system-deps)" >&2; \
	fi

run: venv ## Serve on PLAINTEXT://127.0.0.1:9092 with logs in ./data
	$(VENV)/bin/kmock serve --listeners $(LISTENERS) --log-dirs $(LOG_DIRS)

# timeout --foreground: Ctrl-C still reaches pytest; on timeout pytest gets SIGINT, prints
# what it ran and tears its fixtures down (SIGKILL 60 s later if it does not stop).
test: venv system-deps node-deps sarama ## Whole suite: unit + integration + pipeline (about 13-15 min on 2 cores)
	timeout --foreground --signal=INT --kill-after=60 $(TEST_BUDGET) \
		$(VENV)/bin/python -m pytest -q -ra --durations=15 $(PYTEST_ARGS)

test-fast: venv ## Unit tests only (no integration, no pipeline)
	$(VENV)/bin/python -m pytest -q -ra -m "not integration and not pipeline" $(PYTEST_ARGS)

integration: venv system-deps node-deps sarama ## Integration tests only (real clients)
	$(VENV)/bin/python -m pytest -q -ra -m integration $(PYTEST_ARGS)

lint: venv ## ruff check + format check, import contracts, mypy (protocol, coordinator, storage, schemas, broker, client, cli)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports
	$(VENV)/bin/mypy protocol coordinator storage schemas broker client cli

fmt: venv ## Format and autofix with ruff
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

bench: venv $(BENCH_STAMP) ## Run the benchmarks (writes bench/RESULTS.md; installs the peer Tansu first)
	$(VENV)/bin/python bench/run.py

# The bench's extra packages (pyproject's [bench]: the peer Tansu's wheel, py-spy).
$(BENCH_STAMP): $(VENV_STAMP)
	$(VENV)/bin/python -m pip install --quiet -e '.[bench]'
	touch $@

.PHONY: docker-test
# Installs and starts a Docker engine if need be (root), stops the one it started.
docker-test: venv ## Build and run the image and docker-compose.yml in a Docker engine (tests/docker)
	docker/ci.sh $(VENV)/bin/python $(PYTEST_ARGS)

# A venv that is already installed (VENV=/path/to/a/shared/.venv) is used as it is: rebuilding
# it because this tree's pyproject.toml is newer would reinstall it from this tree.
reliability: $(if $(wildcard $(VENV_STAMP)),,venv) ## Decoder fuzz, crash cycles, 1,000,000-frame live fuzz, 30-min soak (~75 min)
	KMOCK_FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) $(VENV)/bin/python -m pytest tests/fuzz/test_decoders.py -q
	@# atheris writes a crash-<sha1> file with the input that crashed (kept in that directory).
	@dir=$$(mktemp -d) && echo "atheris: $(ATHERIS_SECONDS) s, corpus and log in $$dir" && \
		(cd $$dir && mkdir corpus && $(abspath $(VENV))/bin/python $(CURDIR)/scripts/fuzz_atheris.py \
			-max_total_time=$(ATHERIS_SECONDS) corpus >fuzz.log 2>&1 \
			|| { tail -40 fuzz.log; exit 1; }) && \
		grep -a "^Done" $$dir/fuzz.log
	$(VENV)/bin/python -m pytest tests/reliability -q -ra -m reliability --cycles $(CYCLES) \
		--fuzz-frames $(FUZZ_FRAMES) --soak-minutes $(SOAK_MINUTES)

clean: ## Remove build output, caches and the sarama binary (keeps .venv and ./data)
	rm -rf build dist *.egg-info .pytest_cache .hypothesis .mypy_cache .ruff_cache \
		.import_linter_cache bench/tmp spark-warehouse metastore_db $(SARAMA_BIN)
	find . -path ./$(VENV) -prune -o -name __pycache__ -type d -prune -exec rm -rf {} +

distclean: clean ## Also remove .venv, node_modules and ./data
	rm -rf $(VENV) $(JS_DIR)/node_modules $(CONSOLE_DIR)/node_modules data
