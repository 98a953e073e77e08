"""knowledge-mcp sources: one package per kind of knowledge, and the shared search core."""
