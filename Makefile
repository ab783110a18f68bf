# Two commands do all the set-up on a fresh machine: `make run` and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test lint typecheck pytest bench clean

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --upgrade pip
	$(BIN)/pip install -e '.[dev]'
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/caligo games stats
	$(BIN)/caligo solve leduc_poker --algo cfr+ --iters 2000

lint: $(STAMP)
	$(BIN)/ruff check caligo tests benchmarks

typecheck: $(STAMP)
	$(BIN)/mypy

pytest: $(STAMP)
	$(BIN)/pytest -q

test: lint typecheck pytest

bench: $(STAMP)
	$(BIN)/caligo bench all

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
