"""The write tools measured: `python -m knowledge_mcp.bench.writes.latency`."""
