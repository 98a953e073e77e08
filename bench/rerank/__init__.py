"""The rerank stage measured: `python -m knowledge_mcp.bench.rerank.latency`."""
