"""What hosts attach and pick: the user's items as MCP resources (`items`, `listing`, `capping`),
their prompt library as MCP prompts (`prompts`), and the notifications that tell a user's
clients their items changed (`notify`)."""

from __future__ import annotations

from collections.abc import Callable

from mcp.server.mcpserver import MCPServer

from . import items, listing, prompts
from .notify import ItemChange, Notifier

__all__ = ["ItemChange", "Notifier", "register"]


def register(
    mcp: MCPServer, notifier: Notifier, rename: Callable[[str], str], *, max_chars: int, list_limit: int
) -> None:
    """The item templates, the per-caller resource list and prompt library, subscriptions."""
    items.register(mcp, rename, max_chars)
    listing.register(mcp, list_limit)
    lowlevel = mcp._lowlevel_server
    prompts.register(lowlevel, max_chars)
    notifier.register(lowlevel)
