"""What a source needs from the server to publish its tools, and the shared tool plumbing.

Sources do not import the server: the server hands each source's `register` a `ToolHost`
that resolves the caller's database and defaults from the authenticated request context.
"""

from __future__ import annotations

import functools
import sqlite3
from collections.abc import Awaitable, Callable
from typing import Annotated, Any, ParamSpec, Protocol

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, BeforeValidator, Field, WithJsonSchema

from .errors import KnowledgeError
from .models import Loc, Retrieval
from .registry import SOURCE_NAMES
from .retrieval import Defaults
from .search.request import MAX_PER_ITEM, ResultField, SearchMode
from .search.rerank.backend import Reranking
from .storage.db import source_failure
from .storage.store import Store
from .wire import dump

P = ParamSpec("P")

# The argument types every search tool shares: bounds here are what the tool errors name.
Query = Annotated[str, Field(description='Plain words; "quoted phrase"; trailing * for a prefix (migr*).')]
Mode = Annotated[SearchMode, Field(description="auto (default), lexical, semantic or hybrid.")]
Rerank = Annotated[bool, Field(description="Reorder the top hits with a finer model (slower).")]
Limit = Annotated[int, Field(ge=1, le=100, description="Results per page.")]
Offset = Annotated[int, Field(ge=0, le=10_000, description="Skip this many (pass next_offset).")]
SnippetLength = Annotated[int | None, Field(description="Snippet characters, 50..1000.")]
# A loc goes back as it came: its published schema says only that (the model still validates it).
AnchorLoc = Annotated[
    Loc | None,
    WithJsonSchema({"type": "object"}),
    Field(description="The `loc` of a search result, to read around it."),
]
# Search refinements, said tersely: every word is paid for on every turn (tests/server/test_lean_tools).
Expand = Annotated[bool, Field(description="Add glossary synonyms.")]
PerItem = Annotated[int, Field(ge=1, le=MAX_PER_ITEM, description="Passages per item.")]
ResultFields = Annotated[list[ResultField] | None, Field(description="Add to each result.")]
AnchorQuery = Annotated[str | None, Field(description="Without loc: anchor on the best match of this.")]
GetRetrieval = Annotated[Retrieval | None, Field(description="How much to return; default a snippet.")]


def item_id_of(source: str) -> BeforeValidator:
    """Validates the item argument of `source`'s get tools: a search result's `uri` (notes://…)
    becomes its id; a uri of another source is an error naming the tool that reads it."""

    def item_id(value: object) -> object:
        if not isinstance(value, str) or "://" not in value:
            return value
        scheme, _, rest = value.partition("://")
        if scheme == source:
            return rest
        if scheme in SOURCE_NAMES:
            raise ValueError(f"that is a {scheme} item: read it with {scheme}_get or knowledge_get")
        raise ValueError(f"expected a {source}:// uri or an id")

    return BeforeValidator(item_id)


READ_ONLY = ToolAnnotations(
    read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)


class ToolHost(Protocol):
    async def database(self, ctx: Context, source: str) -> Store:
        """The caller's database of `source`, for a tool (or template) given the request Context."""
        ...

    async def current_database(self, source: str) -> Store:
        """The same for the request being served, for handlers given no Context (static resources)."""
        ...

    def defaults(self, ctx: Context) -> Defaults: ...

    def tool_name(self, name: str) -> str: ...


def reranking_of(host: ToolHost, ctx: Context, rerank: bool) -> Reranking | None:
    """A search request's `rerank`: None unless asked; the host's choice of reranker (a host
    that has none says so in the response)."""
    if not rerank:
        return None
    choose = getattr(host, "reranking", None)
    return choose(ctx) if choose is not None else Reranking(None, "this server has no reranker")


def databases_of(host: ToolHost, ctx: Context) -> Callable[[str], Awaitable[Store]]:
    """The caller's databases by source name, for sources whose filters read another source."""
    return lambda name: host.database(ctx, name)


def tool_errors(
    fn: Callable[P, Awaitable[CallToolResult]], source: str | None = None
) -> Callable[P, Awaitable[CallToolResult]]:
    """Turn our errors into tool errors the model can read and fix; the server keeps serving.

    A database that breaks under a query (a damaged page found mid-search) is one sentence too:
    the source (this tool's, when it has one), the cause and the remedy, without a traceback."""

    @functools.wraps(fn)
    async def wrapper(*args: P.args, **kwargs: P.kwargs) -> CallToolResult:
        try:
            return await fn(*args, **kwargs)
        except KnowledgeError as exc:
            raise ToolError(str(exc)) from exc
        except sqlite3.DatabaseError as exc:
            failure = source_failure(exc, source)
            if failure is None:
                raise
            raise ToolError(str(failure)) from exc

    return wrapper


def add_read_tool(mcp: MCPServer, host: ToolHost, name: str, title: str, fn: Callable[..., Any]) -> None:
    source = name.partition("_")[0]
    wrapped = tool_errors(fn, source if source in SOURCE_NAMES else None)
    mcp.add_tool(wrapped, name=host.tool_name(name), title=title, annotations=READ_ONLY)


def tool_result(model: BaseModel, text: str) -> CallToolResult:
    """Structured content for clients that read it, a compact rendering for those that read text."""
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=dump(model))
