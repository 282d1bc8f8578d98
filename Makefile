# The README's two commands. Both bootstrap .venv themselves, so a fresh clone needs only Python 3.11+.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
TEST_STAMP := $(VENV)/.installed-test
# Every version make run, make test, make docs, the spark extra and make test-pythons install: resolved from
# pyproject.toml's ranges by `make lock` (uv pip compile --universal: one file for Python 3.11 to 3.13) and used as
# constraints, so each fresh clone installs the same set. uv installs it (a wheel, pinned here; pip only bootstraps it).
LOCK := constraints.txt
# The build backend pyproject.toml's [build-system] asks for (setuptools), pinned by `make lock` too: uv builds the
# editable install in an isolated environment, which would otherwise take the newest setuptools of the day.
BUILD_LOCK := build-constraints.txt
UV_VERSION := 0.13.9
LOCK_UPGRADE ?= --upgrade
# Source folders that install as minikafka.<folder> (src/minikafka/<folder> links to them)
PACKAGES := protocol storage cleaner broker testing pipeline
DATA_DIR ?= ./data
METRICS_PORT ?= 9404
HOST ?= 127.0.0.1
PORT ?= 9092
# make check's folders: those holding tests that start no process (the marker sorts the rest out)
CHECK_TESTS := tests/protocol tests/storage tests/cleaner tests/broker tests/test_module_size.py
# make test-pythons: the interpreters nox looks for (python3.12, python3.13) on PATH or under pyenv's versions
PYENV_BINS := $(wildcard $(HOME)/.pyenv/versions/3.12*/bin $(HOME)/.pyenv/versions/3.13*/bin)
empty :=
space := $(empty) $(empty)

.PHONY: run test check test-random test-pythons lint typecheck contracts docs pytest test-container lock clean

$(BIN)/uv:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check uv==$(UV_VERSION)

$(STAMP): pyproject.toml $(LOCK) $(BUILD_LOCK) | $(BIN)/uv
	$(BIN)/uv pip install --quiet --python $(BIN)/python --constraints $(LOCK) --build-constraints $(BUILD_LOCK) -e .
	touch $@

$(TEST_STAMP): pyproject.toml $(LOCK) $(BUILD_LOCK) | $(BIN)/uv
	$(BIN)/uv pip install --quiet --python $(BIN)/python --constraints $(LOCK) --build-constraints $(BUILD_LOCK) \
		-e '.[test]'
	touch $@ $(STAMP)

## make lock: re-resolve constraints.txt and build-constraints.txt (the [build-system] requirements) to the newest
## versions pyproject.toml's ranges allow (then make test); `make lock LOCK_UPGRADE=` only adds what pyproject.toml
## newly asks for and keeps every other pin
lock: | $(BIN)/uv
	$(BIN)/uv pip compile --quiet pyproject.toml --all-extras --universal --python-version 3.11 $(LOCK_UPGRADE) \
		--custom-compile-command "make lock" --output-file $(LOCK)
	$(BIN)/python -c 'import tomllib; print(*tomllib.load(open("pyproject.toml", "rb"))["build-system"]["requires"], \
		sep="\n")' | $(BIN)/uv pip compile --quiet - --universal --python-version 3.11 $(LOCK_UPGRADE) \
		--custom-compile-command "make lock" --output-file $(BUILD_LOCK)

## make run: start the broker on 127.0.0.1:9092, data in ./data, the console and Prometheus metrics on :9404
## (make run PORT=9093 HOST=0.0.0.0 DATA_DIR=/var/lib/minikafka METRICS_PORT=9500)
run: $(STAMP)
	$(BIN)/minikafka serve --config config/server.properties \
		--override listeners=PLAINTEXT://$(HOST):$(PORT) \
		--override log.dirs=$(DATA_DIR) \
		--override minikafka.metrics.port=$(METRICS_PORT)

## make test: lint, import contracts, type checks, the docs site, then the whole test suite
test: lint contracts typecheck docs pytest

## make check: the inner loop (under 2 minutes on 2 cores): lint, import contracts, type checks and the tests that
## start no broker process, JVM or Spark (tests/conftest.py marks the others `process`)
check: lint contracts typecheck
	$(BIN)/python -m pytest -q -p no:randomly -n 2 -m "not process" $(CHECK_TESTS)

## make test-random: make check's tests once in a random order (pytest-randomly; SEED=N repeats an order), to find
## tests that depend on what ran before them
test-random: $(TEST_STAMP)
	$(BIN)/python -m pytest -p randomly $(if $(SEED),--randomly-seed=$(SEED)) -n 2 -m "not process" $(CHECK_TESTS)

## make test-pythons: the suite without its Java and Spark parts on Python 3.12 and 3.13 (noxfile.py)
test-pythons: $(TEST_STAMP)
	PATH="$(subst $(space),:,$(PYENV_BINS)):$$PATH" $(BIN)/nox --sessions tests

lint: $(TEST_STAMP)
	$(BIN)/ruff check $(PACKAGES) tests bench

contracts: $(TEST_STAMP)
	$(BIN)/lint-imports

typecheck: $(TEST_STAMP)
	MYPYPATH=src $(BIN)/mypy

## make docs: the site in build/site (docs/, reference pages generated from the code); any warning, e.g. a broken
## link or anchor, fails it. Not --quiet: MkDocs counts for --strict only the warnings it logs. The two variables
## silence the MkDocs-2 notices that Material and a plugin print on every build (DESIGN.md: the docs site).
docs: $(TEST_STAMP)
	NO_MKDOCS_2_WARNING=1 DISABLE_MKDOCS_2_WARNING=true $(BIN)/mkdocs build --strict

## PYTEST_ARGS: more pytest options for make test, e.g. PYTEST_ARGS="-p randomly" for the whole suite in a random
## order (pytest-randomly prints the seed; add --randomly-seed=N to repeat one)
pytest: $(TEST_STAMP)
	$(BIN)/python -m pytest -q -ra --durations=20 -n 2 --dist loadfile $(PYTEST_ARGS)

## make test-container: build docker/Dockerfile's image with podman (base image from Debian's packages, cached;
## nothing pulled) and test it running (tests/docker/test_container.py; skips with the reason without podman)
test-container: $(TEST_STAMP)
	MINIKAFKA_CONTAINER_TESTS=1 $(BIN)/python -m pytest -q -ra --durations=10 -p no:xdist tests/docker/test_container.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
