"""Several HTTP workers sharing state in PostgreSQL, measured: `load`
(python -m knowledge_mcp.bench.workers.load)."""
