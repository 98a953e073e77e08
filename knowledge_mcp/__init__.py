"""knowledge-mcp: an MCP server that searches and reads your own knowledge.

The distribution installs this one namespace. Its four packages live in the repository's
top-level folders and are mapped here by `setup.py` (`package_dir`):

- `knowledge_mcp.sources` ← `sources/`: one package per source and the shared search pipeline;
- `knowledge_mcp.aggregator` ← `aggregator/`: search and get across every source;
- `knowledge_mcp.server` ← `server/`: MCP wiring, transports, auth, sessions, the CLI;
- `knowledge_mcp.bench` ← `bench/`: `knowledge-mcp bench` and `eval`, which drive the server.

`docs/architecture.md` maps the packages and the search pipeline.
"""

DISTRIBUTION = "knowledge-mcp-server"
"""The name on the package index (`knowledge-mcp` there is an unrelated project); the command
stays `knowledge-mcp`. Installed metadata (the version) is looked up under this name."""
