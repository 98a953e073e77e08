"""`knowledge-mcp setup HOST`: the MCP hosts we know (`locations`), merging our entry into
their config files (`merge`), and the command (`command`)."""

from .command import add_parser, run_setup_command

__all__ = ["add_parser", "run_setup_command"]
