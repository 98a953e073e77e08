"""The benchmark and the evaluation (DESIGN §11): `knowledge-mcp bench` and `eval`, driving the server."""
