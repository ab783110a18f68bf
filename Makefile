# Two commands do all the set-up on a fresh machine: `make run` and `make test`.
PY ?= python3
PORT ?= 8000
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run demo test lint typecheck pytest bench clean

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --upgrade pip
	$(BIN)/pip install -e '.[dev]'
	touch $(STAMP)

# The main job: the web app on 127.0.0.1 (URL printed), playing the strongest available agent.
run: $(STAMP)
	$(BIN)/caligo web serve --host 127.0.0.1 --port $(PORT)

demo: $(STAMP)
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
