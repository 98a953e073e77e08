"""`knowledge-mcp bench --database-url`: the bench on the PostgreSQL item store."""
