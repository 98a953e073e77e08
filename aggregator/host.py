"""What the aggregator needs from the server: the sources' ToolHost plus the caller's session."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from mcp.server.mcpserver import Context

from knowledge_mcp.sources.tooling import ToolHost

from .quotes.work import QuoteWork


class Session(Protocol):
    """One conversation's memory, persisted per user (DESIGN §8). Everything is keyed by uri."""

    @property
    def session_id(self) -> str: ...

    @property
    def seen(self) -> Sequence[str]:
        """URIs already returned in this session, oldest first (bounded)."""
        ...

    @property
    def recent_queries(self) -> Sequence[str]:
        """The session's last queries, most recent last (bounded)."""
        ...

    @property
    def defaults(self) -> dict[str, Any]:
        """Per-session defaults: snippet_length, max_tokens, sibling_window, order_by, chars_per_token."""
        ...

    async def record_results(self, query: str, uris: Sequence[str]) -> None:
        """Remember a search: the query in recent_queries, every returned uri as seen."""
        ...

    async def mark_viewed(self, uri: str) -> None:
        """A get read this item."""
        ...


class AggregatorHost(ToolHost, Protocol):
    quote_work: QuoteWork
    """Runs quote checks (verify_quote, session_cite) in steps, within the server's budget."""

    async def session(self, ctx: Context, session_id: str | None) -> Session | None:
        """The session for this call: the explicit `session_id`, else the transport's session
        (Mcp-Session-Id, the WebSocket connection, the stdio process or KNOWLEDGE_MCP_SESSION),
        else None. Unknown or expired ids start fresh state, never an error."""
        ...

    def client_name(self, ctx: Context) -> str | None:
        """The client's clientInfo.name, for deep-research alias publication."""
        ...
