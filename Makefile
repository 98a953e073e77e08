PY      ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.installed

.PHONY: install demo test conformance lint typecheck eval bench clean

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install -q -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/knowledge-mcp demo

test: $(STAMP)
	$(BIN)/python -m pytest -q

# The official MCP conformance suite against `serve --transport http --no-auth` (needs npm).
conformance: $(STAMP)
	bash .ci/conformance.sh

lint: $(STAMP)
	$(BIN)/ruff check server sources aggregator tests
	$(BIN)/ruff format --check server sources aggregator tests

typecheck: $(STAMP)
	$(BIN)/mypy

eval: $(STAMP)
	$(BIN)/knowledge-mcp eval --beir ../shared/data/scifact --split train

clean:
	rm -rf $(VENV) .ci/conformance/node_modules .pytest_cache .mypy_cache .ruff_cache build *.egg-info
