"""Ranking checks on a real folder of mixed files (`runner`): `python -m knowledge_mcp.bench.checks`."""
