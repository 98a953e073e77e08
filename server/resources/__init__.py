"""What hosts attach and pick: the user's items as MCP resources (`items`, `listing`, `capping`),
their prompt library as MCP prompts (`prompts`), and the notifications that tell a user's
clients their items changed (`notify`)."""

from __future__ import annotations

from typing import Any

from mcp.server.mcpserver import MCPServer

from . import items, listing, prompts
from .notify import ItemChange, Notifier

__all__ = ["ItemChange", "Notifier", "register"]


def register(mcp: MCPServer, host: Any, *, max_chars: int, list_limit: int) -> None:
    """The item templates, the per-caller resource list and prompt library, subscriptions."""
    items.register(mcp, host, max_chars)
    listing.register(mcp, host, list_limit)
    lowlevel = mcp._lowlevel_server
    prompts.register(lowlevel, host, max_chars)
    host.notifier.register(lowlevel)
