"""MCP over WebSocket: the server side at `/ws` and the client half the bench and tests drive it with."""
