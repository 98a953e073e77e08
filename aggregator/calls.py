"""What the aggregator's tools read of the call they serve: the sources' `Call` plus the caller's
session and the quote checks' budget (the server's calls are all of it, `server/call.py`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from knowledge_mcp.sources.tooling import Call, CallSlot

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

    async def log_verdict(self, quote: str, verdict: dict[str, Any]) -> None:
        """A quote was checked: the verdict goes into the session's timeline."""
        ...


class AggregatorCall(Call, Protocol):
    @property
    def session(self) -> Session | None:
        """The transport's session (Mcp-Session-Id, the WebSocket connection, the stdio process or
        KNOWLEDGE_MCP_SESSION), loaded before the tool ran, else None."""
        ...

    async def with_session(self, session_id: str | None) -> AggregatorCall:
        """This call with the session of `session_id` (None: the transport's): its `session` and
        the defaults it sets. Unknown or expired ids start fresh state, never an error."""
        ...

    @property
    def quote_work(self) -> QuoteWork:
        """Runs quote checks (verify_quote, session_cite) in steps, within the server's budget."""
        ...

    @property
    def source_timeout_s(self) -> float:
        """How long knowledge_search waits for each source."""
        ...


AGGREGATOR_CALL: CallSlot[AggregatorCall] = CallSlot("aggregator_call")


def current_call() -> AggregatorCall:
    """The call of the request being served, as the aggregator reads it."""
    return AGGREGATOR_CALL.get()
