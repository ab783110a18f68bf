# Set-up on a fresh machine (Python 3.11 with `venv`, and `make`): `make run` installs what
# playing needs and starts the web app; `make test` adds the development tools and runs the checks.
PY ?= python3
PORT ?= 8000
VENV := .venv
BIN := $(VENV)/bin
# One stamp per job: the runtime dependencies (run, demo, bench) and the development extra
# (pytest, mypy, ruff, playwright, ...) on top of them (lint, typecheck, pytest).
RUN_STAMP := $(VENV)/.installed-run
DEV_STAMP := $(VENV)/.installed-dev

.PHONY: run demo test lint typecheck pytest bench clean

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --upgrade pip

$(RUN_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install -e .
	touch $@

$(DEV_STAMP): $(RUN_STAMP)
	$(BIN)/pip install -e '.[dev]'
	touch $@

# The main job: the web app on 127.0.0.1 (URL printed), playing the strongest available agent.
run: $(RUN_STAMP)
	$(BIN)/caligo web serve --host 127.0.0.1 --port $(PORT)

demo: $(RUN_STAMP)
	$(BIN)/caligo games stats
	$(BIN)/caligo solve leduc_poker --algo cfr+ --iters 2000

lint: $(DEV_STAMP)
	$(BIN)/ruff check caligo tests benchmarks

# the whole package and the benchmarks; the search and the engines also under --strict
typecheck: $(DEV_STAMP)
	$(BIN)/mypy
	$(BIN)/mypy benchmarks
	$(BIN)/mypy --strict caligo/search caligo/agents

# The whole suite; `CALIGO_SHORT=1 make test` runs the long tests in their short form (as CI).
pytest: $(DEV_STAMP)
	$(BIN)/pytest -q

test: lint typecheck pytest

bench: $(RUN_STAMP)
	$(BIN)/caligo bench all

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
