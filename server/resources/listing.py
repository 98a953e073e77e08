"""`resources/list`, per caller: the static resources, then a bounded page of the caller's most
recently modified items across every source.

Listing every item is not an option: a library of 100,000 items would be one enormous answer,
paid for each time a host refreshes its picker (and again on every `list_changed`). Hosts find
items with search and attach them by uri (the templates of `items.py`); the list offers the
`resource_list_limit` most recently modified items (default 50; 0 lists only the static
resources), so an attach picker shows what the user is working on. There is no next page.
"""

from __future__ import annotations

from typing import Any

from mcp.server.context import ServerRequestContext
from mcp.server.mcpserver import MCPServer
from mcp_types import Annotations, ListResourcesResult, PaginatedRequestParams, Resource

from knowledge_mcp.sources.registry import ENTRIES, SOURCE_NAMES
from knowledge_mcp.sources.tooling import current_call


def recent_resource(source: str, row: Any) -> Resource:
    uri = f"{source}://{row['item_id']}"
    title = str(row["title"] or uri)
    return Resource(
        uri=uri,
        name=title,
        title=title,
        description=f"{source} item, last modified {row['last_modified']}",
        mime_type=ENTRIES[source].mime_type,
        annotations=Annotations(last_modified=row["last_modified"]),
    )


async def recent_items(limit: int) -> list[Resource]:
    """The caller's `limit` most recently modified items across every source, newest first."""
    if limit <= 0:
        return []
    found: list[tuple[str, Resource]] = []
    for source in SOURCE_NAMES:
        db = await current_call().database(source)
        for row in await db.recent(limit):
            found.append((str(row["last_modified"]), recent_resource(source, row)))
    found.sort(key=lambda pair: pair[0], reverse=True)
    return [resource for _, resource in found[:limit]]


def register(mcp: MCPServer, limit: int) -> None:
    """Answer `resources/list` with the static resources and the caller's recent items."""

    async def list_resources(
        ctx: ServerRequestContext[Any, Any], params: PaginatedRequestParams | None
    ) -> ListResourcesResult:
        static = await mcp.list_resources()
        return ListResourcesResult(resources=[*static, *await recent_items(limit)])

    mcp._lowlevel_server.add_request_handler("resources/list", PaginatedRequestParams, list_resources)
