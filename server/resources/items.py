"""Every item as an MCP resource: one template per registered source (`notes://{id}`,
`media://{id}`, `chats://{conversation_id}`, `characters://{id}`, `prompts://{id}`), the uris
search returns.

`resources/read` gives the item's text, the same text `*_get` reads in `full` mode (a chat as
`sender: message` paragraphs, a card or prompt as its `## Field` sections, a document or email
as the text extracted from it), within `resource_max_chars` (`capping.py`), with the MIME type
its source declares (`SourceEntry.mime_type`: `text/markdown` for notes, cards and prompts,
`text/plain` for media (extracted text, whatever the file was) and chats). The item is looked
up in the caller's own database only: another user's id is not found. Static resources
(`media://types`) win over the templates: the SDK matches concrete uris first.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.shared.exceptions import MCPError
from mcp_types import INTERNAL_ERROR

from knowledge_mcp.sources.errors import KnowledgeError, NotFoundError
from knowledge_mcp.sources.registry import ENTRIES
from knowledge_mcp.sources.source import SourceEntry
from knowledge_mcp.sources.storage.store import Store
from knowledge_mcp.sources.tooling import current_call

from ..protocol_errors import unknown_resource
from .capping import cap, marker


def template_uri(entry: SourceEntry) -> str:
    return f"{entry.name}://{{{entry.uri_variable}}}"


async def item_text(db: Store, entry: SourceEntry, item_id: str, max_chars: int, tool_name: Any) -> str:
    """The item's text within `max_chars`, and the marker saying how to read on when cut (with
    the source's own get tool, when it has tools)."""
    source = entry.source
    item, chunks = await source.load_item(db, item_id)
    text = str(item["content"])
    capped = cap(text, max_chars)
    if capped.cut is None:
        return capped.text
    chunk = next((c for c in chunks if c["end_offset"] > capped.cut), None)
    loc = source.loc(item, chunk).model_dump(exclude_none=True) if chunk is not None else {}
    loc["approx_offset"] = max(capped.cut, chunk["start_offset"]) if chunk is not None else capped.cut
    return capped.text + marker(
        shown=len(capped.text),
        total=len(text),
        uri=source.uri(item_id),
        get_tool=tool_name(f"{source.name}_get") if entry.tools else None,
        id_field=source.id_field,
        item_id=item_id,
        loc=loc,
        knowledge_get=tool_name("knowledge_get"),
    )


def register(mcp: MCPServer, rename: Callable[[str], str], max_chars: int) -> None:
    """A resource template for each registered source."""
    for entry in ENTRIES.values():
        _register_source(mcp, rename, entry, max_chars)


def _register_source(
    mcp: MCPServer, rename: Callable[[str], str], entry: SourceEntry, max_chars: int
) -> None:
    source, name = entry.source, entry.name

    async def read(item_id: str, ctx: Context) -> str:
        uri = source.uri(item_id)
        try:
            db = await current_call().database(name)
            return await item_text(db, entry, item_id, max_chars, rename)
        except NotFoundError:
            raise unknown_resource(uri, f"use a uri from {name}_search or knowledge_search results") from None
        except KnowledgeError as exc:
            raise MCPError(INTERNAL_ERROR, str(exc), data={"uri": uri}) from None

    mcp.resource(
        template_uri(entry),
        name=f"{name}_item",
        title=entry.label,
        description=f"A {name} item's text by its uri (as {name}_search and knowledge_search return it).",
        mime_type=entry.mime_type,
    )(_reader(entry.uri_variable, read))


def _reader(variable: str, read: Callable[[str, Context], Awaitable[str]]) -> Callable[..., Awaitable[str]]:
    """A template handler whose one argument is named `variable`, as the template's is (the SDK
    matches them by name)."""

    async def handler(ctx: Context, **uri: str) -> str:
        return await read(uri[variable], ctx)

    handler.__annotations__ = {variable: str, "ctx": Context, "return": str}
    handler.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [
            inspect.Parameter(variable, inspect.Parameter.KEYWORD_ONLY, annotation=str),
            inspect.Parameter("ctx", inspect.Parameter.KEYWORD_ONLY, annotation=Context),
        ],
        return_annotation=str,
    )
    return handler
