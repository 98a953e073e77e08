"""Every item as an MCP resource: one template per source (`notes://{id}`, `media://{id}`,
`chats://{conversation_id}`, `characters://{id}`, `prompts://{id}`), the uris search returns.

`resources/read` gives the item's text, the same text `*_get` reads in `full` mode (a chat as
`sender: message` paragraphs, a card or prompt as its `## Field` sections, a document or email
as the text extracted from it), within `resource_max_chars` (`capping.py`), with the MIME type
of that text: `text/markdown` for notes, cards and prompts, `text/plain` for media (extracted
text, whatever the file was) and chats. The item is looked up in the caller's own database
only: another user's id is not found. Static resources (`media://types`) win over the
templates: the SDK matches concrete uris first.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.shared.exceptions import MCPError
from mcp_types import INTERNAL_ERROR

from knowledge_mcp.sources.errors import KnowledgeError, NotFoundError
from knowledge_mcp.sources.registry import SOURCE_NAMES, get_source
from knowledge_mcp.sources.source import ChunkedSource
from knowledge_mcp.sources.storage.db import Database
from knowledge_mcp.sources.tooling import current_call

from ..protocol_errors import unknown_resource
from .capping import cap, marker

MIME_TYPES = {
    "notes": "text/markdown",
    "media": "text/plain",
    "chats": "text/plain",
    "characters": "text/markdown",
    "prompts": "text/markdown",
}
TITLES = {
    "notes": "Note",
    "media": "Media item (its text)",
    "chats": "Chat conversation",
    "characters": "Character card",
    "prompts": "Prompt",
}


def template_uri(source: str) -> str:
    return f"{source}://{{conversation_id}}" if source == "chats" else f"{source}://{{id}}"


async def item_text(
    db: Database, source: ChunkedSource[Any], item_id: str, max_chars: int, tool_name: Any
) -> str:
    """The item's text within `max_chars`, and the marker saying how to read on when cut."""
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
        get_tool=tool_name(f"{source.name}_get"),
        id_field=source.id_field,
        item_id=item_id,
        loc=loc,
        knowledge_get=tool_name("knowledge_get"),
    )


def register(mcp: MCPServer, rename: Callable[[str], str], max_chars: int) -> None:
    """A resource template for each source."""
    for name in SOURCE_NAMES:
        _register_source(mcp, rename, name, max_chars)


def _register_source(mcp: MCPServer, rename: Callable[[str], str], name: str, max_chars: int) -> None:
    source = get_source(name)

    async def read(item_id: str, ctx: Context) -> str:
        uri = source.uri(item_id)
        try:
            db = await current_call().database(name)
            return await item_text(db, source, item_id, max_chars, rename)
        except NotFoundError:
            raise unknown_resource(uri, f"use a uri from {name}_search or knowledge_search results") from None
        except KnowledgeError as exc:
            raise MCPError(INTERNAL_ERROR, str(exc), data={"uri": uri}) from None

    async def read_item(id: str, ctx: Context) -> str:
        return await read(id, ctx)

    async def read_conversation(conversation_id: str, ctx: Context) -> str:
        return await read(conversation_id, ctx)

    fn = read_conversation if name == "chats" else read_item
    mcp.resource(
        template_uri(name),
        name=f"{name}_item",
        title=TITLES[name],
        description=f"A {name} item's text by its uri (as {name}_search and knowledge_search return it).",
        mime_type=MIME_TYPES[name],
    )(fn)
