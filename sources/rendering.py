"""The text a search or get tool sends beside its structured result: pure functions of the
response models, for hosts whose model reads text (no MCP SDK here; `tooling.tool_result`
pairs the two). A source with a response of its own renders it beside its models
(`chats/rendering.py`, `notes/rendering.py`).
"""

from __future__ import annotations

from typing import Any

from .models import GetResponse, ResultItem, SearchResponse
from .wire import dump


def hit_line(r: ResultItem) -> str:
    """One search hit: rank, score, title, uri, tags, matched terms and why; then its snippet."""
    extras = []
    if r.tags:
        extras.append("tags: " + ", ".join(r.tags[:6]))
    if r.matched_terms:
        extras.append("matched: " + ", ".join(r.matched_terms))
    if r.reason:
        extras.append("why: " + r.reason)
    tail = f" ({'; '.join(extras)})" if extras else ""
    line = f"{r.rank}. [{r.score:.2f}] {r.title} — {r.uri}{tail}\n   {r.snippet}"
    return line + (f"\n   content: {r.content}" if r.content else "")


def render_search(response: SearchResponse[Any]) -> str:
    head = f"{response.count} result(s), about {response.total_estimated} in all"
    if response.has_more:
        head += f"; next page: offset={response.next_offset}"
    lines = [head, *(hit_line(r) for r in response.results)]
    if response.expanded_terms:
        lines.append("expanded: " + "; ".join(response.expanded_terms))
    lines += [f"warning: {w}" for w in response.warnings]
    return "\n".join(lines)


def render_get(response: GetResponse[Any]) -> str:
    m = response.meta
    head = f"{m.title} — {m.uri} ({response.mode_used}, ~{response.estimated_tokens} tokens"
    head += ", truncated)" if response.truncated else ")"
    content = response.content if isinstance(response.content, str) else str(response.content)
    lines = [head, "", content]
    if response.next is not None:
        lines += ["", f"continue with loc={dump(response.next.loc)} retrieval={response.next.retrieval}"]
    lines += [f"warning: {w}" for w in response.warnings]
    return "\n".join(lines)
