"""The text `knowledge_search` and `knowledge_get` send beside their structured results. Pure."""

from __future__ import annotations

from typing import Any

from knowledge_mcp.sources.models import GetResponse
from knowledge_mcp.sources.registry import ENTRIES
from knowledge_mcp.sources.wire import render_get, render_search

from .models import KnowledgeSearchResponse


def render_knowledge_search(response: KnowledgeSearchResponse) -> str:
    """The merged hits, then what the session hid or down-ranked."""
    text = render_search(response)
    if response.seen_applied is not None:
        applied = response.seen_applied
        done = "hidden" if applied.mode == "hide" else "down-ranked (score halved)"
        text += f"\nseen in this session, {done}: {applied.count} ({', '.join(applied.uris)})"
    return text


def render_knowledge_get(response: GetResponse[Any]) -> str:
    """An item of any source as its own get tool renders it (a conversation as its messages)."""
    render = ENTRIES[response.meta.source].render_get or render_get
    return render(response)
