"""Several HTTP workers on one port sharing state: processes (the supervisor, each worker's app),
session_ids (Mcp-Session-Id over the stateless SDK transport)."""
