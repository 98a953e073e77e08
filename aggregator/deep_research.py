"""The deep-research aliases `search(query)` and `fetch(id)`, in the exact shapes those clients expect.

`search` answers one text item holding `{"results": [{"id", "title", "url"}]}`; `fetch` one
holding `{"id", "title", "text", "url", "metadata"}`. Neither has structured output. Whether
they are published is `deep_research_aliases`: "always", "never", or "auto" — shown (in
tools/list) and callable only for clients whose clientInfo.name looks like a deep-research
client (contains openai or chatgpt, or matches a `deep_research_clients` pattern).
"""

from __future__ import annotations

import fnmatch
import json
from collections.abc import Sequence
from typing import Annotated, Any, Literal

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import Context, MCPServer
from mcp_types import CallToolResult, ListToolsResult, TextContent
from pydantic import Field

from knowledge_mcp.sources.chats.models import ChatGetResponse
from knowledge_mcp.sources.models import GetResponse, Retrieval
from knowledge_mcp.sources.tooling import Tool, add_tools
from knowledge_mcp.sources.wire import dump

from .calls import current_call
from .routing import routed_get
from .search import KnowledgeQuery, knowledge_search

AliasMode = Literal["auto", "always", "never"]
ALIASES = frozenset({"search", "fetch"})
KNOWN_CLIENTS = ("openai", "chatgpt")
# Search-only fields of a result: the rest of it is the item's metadata.
NOT_METADATA = frozenset(
    {"id", "uri", "title", "snippet", "score", "score_type", "rank", "matched_terms", "match_count", "loc"}
)


def is_deep_research_client(name: str | None, patterns: Sequence[str]) -> bool:
    if not name:
        return False
    lowered = name.lower()
    return any(k in lowered for k in KNOWN_CLIENTS) or any(
        fnmatch.fnmatch(lowered, p.lower()) for p in patterns
    )


def text_result(payload: dict[str, Any]) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=json.dumps(payload, ensure_ascii=False))])


def item_text(response: GetResponse[Any]) -> str:
    if isinstance(response, ChatGetResponse):
        return "\n\n".join(f"{m.sender} ({m.role}): {m.text}" for m in response.content)
    return response.content if isinstance(response.content, str) else json.dumps(response.content)


def item_url(fields: dict[str, Any], uri: str) -> str:
    url = fields.get("url")
    return url if isinstance(url, str) and url else uri


async def search(
    query: Annotated[str, Field(description="What to look for, in plain words.")], ctx: Context
) -> CallToolResult:
    """Search the user's own knowledge base (notes, documents, emails, web pages, chats,
    character cards, prompts) and list the best matches. Plain words are matched with
    stemming; "quoted words" as a phrase. Returns JSON {"results": [{"id", "title", "url"}]};
    pass a result's id to fetch to read the item. Asking again in the same session
    brings items not yet returned.
    """
    call = current_call()
    response = await knowledge_search(call, KnowledgeQuery(query), timeout_s=call.source_timeout_s)
    results = []
    for r in response.results:
        results.append({"id": r.uri, "title": r.title, "url": item_url(dump(r), r.uri)})
    return text_result({"results": results})


async def fetch(
    id: Annotated[str, Field(description="The id of a search result (e.g. notes://…).")], ctx: Context
) -> CallToolResult:
    """Read one item of the user's knowledge base by the id a search result gave. Returns
    JSON {"id", "title", "text", "url", "metadata"}: text is the item's full text (cut at
    the configured token budget), metadata its source-specific fields (source, dates,
    tags, email sender and subject, chat participants, prompt author…).
    """
    call = current_call()
    budget = Retrieval(mode="full", max_tokens=call.defaults().max_tokens)
    response = await routed_get(call, id, retrieval=budget)
    fields = dump(response.meta)
    payload = {
        "id": response.meta.uri,
        "title": response.meta.title,
        "text": item_text(response),
        "url": item_url(fields, response.meta.uri),
        "metadata": {k: v for k, v in fields.items() if k not in NOT_METADATA},
    }
    return text_result(payload)


TOOLS = (Tool("search", "Search (deep research)", search), Tool("fetch", "Fetch (deep research)", fetch))


def register(mcp: MCPServer, *, mode: AliasMode = "auto", clients: Sequence[str] = ()) -> None:
    """Add `search` and `fetch` (never renamed by `tool_names`: their names have no prefix), and
    with "auto" the middleware that shows them only to deep-research clients."""
    if mode == "never":
        return
    add_tools(mcp, TOOLS, lambda name: name)
    if mode == "auto":
        mcp.middleware.append(AliasGate(clients))


class AliasGate:
    """Server middleware: hide `search`/`fetch` from tools/list and refuse their calls unless the
    client's clientInfo.name looks like a deep-research client."""

    def __init__(self, patterns: Sequence[str]) -> None:
        self.patterns = tuple(patterns)

    def allowed(self, ctx: ServerRequestContext[Any, Any]) -> bool:
        params = getattr(ctx.session, "client_params", None)
        info = getattr(params, "client_info", None)
        return is_deep_research_client(getattr(info, "name", None), self.patterns)

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if ctx.method == "tools/call":
            name = (ctx.params or {}).get("name")
            if name in ALIASES and not self.allowed(ctx):
                return CallToolResult(
                    content=[TextContent(type="text", text=f"Unknown tool: {name}")], is_error=True
                )
            return await call_next(ctx)
        result = await call_next(ctx)
        if ctx.method == "tools/list" and not self.allowed(ctx):
            if isinstance(result, ListToolsResult):
                result = result.model_copy(
                    update={"tools": [t for t in result.tools if t.name not in ALIASES]}
                )
            elif isinstance(result, dict) and isinstance(result.get("tools"), list):
                result = {**result, "tools": [t for t in result["tools"] if t.get("name") not in ALIASES]}
        return result


__all__ = ["AliasGate", "is_deep_research_client", "register"]
