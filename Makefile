PY      ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.installed
PACKAGES := server sources aggregator bench

.PHONY: install demo test conformance lint typecheck eval bench clean

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

$(STAMP): $(BIN)/python pyproject.toml setup.py
	$(BIN)/python -m pip install -q -e '.[dev,semantic,postgres]'
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
	$(BIN)/ruff check knowledge_mcp $(PACKAGES) tests setup.py
	$(BIN)/ruff format --check knowledge_mcp $(PACKAGES) tests setup.py

# mypy reads the packages by their installed names (knowledge_mcp.server, …): a staging folder
# of links maps the top-level folders into the namespace, as setup.py does for an install.
TYPECHECK := build/typecheck
typecheck: $(STAMP)
	rm -rf $(TYPECHECK) && mkdir -p $(TYPECHECK)/knowledge_mcp
	cp knowledge_mcp/*.py $(TYPECHECK)/knowledge_mcp/
	for d in $(PACKAGES); do ln -s $(CURDIR)/$$d $(TYPECHECK)/knowledge_mcp/$$d; done
	cd $(TYPECHECK) && $(CURDIR)/$(BIN)/mypy --config-file $(CURDIR)/pyproject.toml -p knowledge_mcp

eval: $(STAMP)
	$(BIN)/knowledge-mcp eval --beir ../shared/data/scifact --split train

clean:
	rm -rf $(VENV) .ci/conformance/node_modules .pytest_cache .mypy_cache .ruff_cache build *.egg-info
