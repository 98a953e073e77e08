"""knowledge-mcp server: MCP wiring, transports, context, CLI."""
