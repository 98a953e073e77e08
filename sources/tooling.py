"""The shared tool plumbing: the call a tool serves, argument types, the tool table, errors as
tool errors.

A source's tools are plain functions listed in its `TOOLS` table. They read the request they
serve with `current_call()`: the server builds one call per MCP request (`server/call.py`), from
its authentication only, and serves the request inside it, so sources never import the server.
Each layer names what it reads of the call with a protocol of its own and a `CallSlot` typed by
it (the aggregator's adds the session, the notes' writing its permit, the server's its
services); the server fills every slot with the same call.
"""

from __future__ import annotations

import functools
import sqlite3
from collections.abc import Awaitable, Callable, Iterable
from typing import Annotated, Any, NamedTuple, ParamSpec

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, BeforeValidator, Field, WithJsonSchema

# The call a tool serves lives in `calls` (no MCP SDK there); named here too, as it always was.
from .calls import CALL as CALL
from .calls import Call as Call
from .calls import CallSlot as CallSlot
from .calls import current_call as current_call
from .errors import KnowledgeError
from .models import Loc, Retrieval
from .registry import SOURCE_NAMES
from .search.request import MAX_PER_ITEM, ResultField, SearchMode, SearchRequest
from .source import ChunkedSource
from .storage.db import source_failure
from .wire import dump, render_get, render_search

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


class Tool(NamedTuple):
    """One row of a tool table: the published name, its title and hints, the function."""

    name: str
    title: str
    fn: Callable[..., Awaitable[CallToolResult]]
    annotations: ToolAnnotations = READ_ONLY


def add_tools(mcp: MCPServer, tools: Iterable[Tool], rename: Callable[[str], str]) -> None:
    """Publish `tools` under their names as `rename` spells them (`tool_names`); a source's own
    tools name that source in the errors of its damaged database."""
    for tool in tools:
        source = tool.name.partition("_")[0]
        wrapped = tool_errors(tool.fn, source if source in SOURCE_NAMES else None)
        mcp.add_tool(wrapped, name=rename(tool.name), title=tool.title, annotations=tool.annotations)


def tool_result(model: BaseModel, text: str) -> CallToolResult:
    """Structured content for clients that read it, a compact rendering for those that read text."""
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=dump(model))


async def search_result(source: ChunkedSource[Any], request: SearchRequest, rerank: bool) -> CallToolResult:
    """A source's search tool's answer: `request` over the caller's store of `source`, reranked
    when asked, with its text rendering."""
    call = current_call()
    request.rerank = call.reranking(rerank)
    response = await source.search(await call.database(source.name), request, call.defaults())
    return tool_result(response, render_search(response))


async def get_result(
    source: ChunkedSource[Any], item_id: str, loc: Loc | None, query: str | None, retrieval: Retrieval | None
) -> CallToolResult:
    """A source's get tool's answer: the caller's item within the budget, with its text rendering."""
    call = current_call()
    db = await call.database(source.name)
    response = await source.get(
        db, item_id, loc=loc, query=query, retrieval=retrieval, defaults=call.defaults()
    )
    return tool_result(response, render_get(response))
