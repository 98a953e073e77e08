"""What damage detection costs: `python -m knowledge_mcp.bench.damage.check_cost --size N`."""
