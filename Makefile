PY      ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.installed
PACKAGES := server sources aggregator bench
DIST    ?= dist
MCPB    := .ci/mcpb/node_modules/.bin/mcpb

.PHONY: install demo test conformance lint typecheck eval bench clean dist bundle

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

# The wheel and sdist users install (`uvx`, `pipx`, the package index), into $(DIST)/.
dist: $(STAMP)
	rm -rf $(DIST)
	$(BIN)/python -m build --outdir $(DIST) .

# The official MCPB CLI, pinned in .ci/mcpb/package-lock.json (needs npm once).
$(MCPB): .ci/mcpb/package-lock.json
	cd .ci/mcpb && npm ci --no-audit --no-fund --loglevel=error
	touch $(MCPB)

# The Claude Desktop extension $(DIST)/knowledge-mcp-<version>.mcpb, validated and packed by mcpb.
bundle: dist $(MCPB)
	$(BIN)/python packaging/bundle.py --dist $(DIST) --mcpb $(MCPB)

lint: $(STAMP)
	$(BIN)/ruff check knowledge_mcp $(PACKAGES) experiments tests setup.py packaging
	$(BIN)/ruff format --check knowledge_mcp $(PACKAGES) experiments tests setup.py packaging

# mypy reads the packages by their installed names (knowledge_mcp.server, …): a staging folder
# of links maps the top-level folders into the namespace, as setup.py does for an install;
# experiments/ (not installed) sits beside it, as in a clone.
TYPECHECK := build/typecheck
typecheck: $(STAMP)
	rm -rf $(TYPECHECK) && mkdir -p $(TYPECHECK)/knowledge_mcp
	cp knowledge_mcp/*.py $(TYPECHECK)/knowledge_mcp/
	for d in $(PACKAGES); do ln -s $(CURDIR)/$$d $(TYPECHECK)/knowledge_mcp/$$d; done
	ln -s $(CURDIR)/experiments $(TYPECHECK)/experiments
	cd $(TYPECHECK) && $(CURDIR)/$(BIN)/mypy --config-file $(CURDIR)/pyproject.toml -p knowledge_mcp -p experiments

eval: $(STAMP)
	$(BIN)/knowledge-mcp eval --beir ../shared/data/scifact --split train

clean:
	rm -rf $(VENV) $(DIST) .ci/conformance/node_modules .ci/mcpb/node_modules .pytest_cache .mypy_cache .ruff_cache build *.egg-info
