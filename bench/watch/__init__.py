"""`serve --watch` measured (python -m knowledge_mcp.bench.watch.latency)."""
