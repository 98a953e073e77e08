"""`ChunkedSource`: what a source is — the part a new source implements.

A source declares its name, id field, result model, migrations, the file types it reads and
its parser, and adds its own search options (filters, columns) and type-aware result fields
and anchors. Searching is the shared pipeline (`search/`), reading an item is `reading.py`;
the methods here only hand the source to them.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeAlias

import aiosqlite
from pydantic import BaseModel, ConfigDict

from .errors import InvalidArgumentError
from .models import (
    GetResponse,
    Loc,
    OrderBy,
    R,
    Retrieval,
    RetrievalMode,
    SearchResponse,
    SourceName,
    trusted,
)

if TYPE_CHECKING:  # the search and reading code is loaded when a source first searches or reads:
    # `knowledge-mcp import` never does (docs/performance.md, "Lazy imports")
    from .retrieval import Defaults
    from .search.lexical.memory_index import MemoryIndexes, Ranked
    from .search.pipeline import SearchPipeline
    from .search.request import Filter, FtsColumn, SearchMode, SearchRequest
    from .storage.db import Database, Migration
    from .storage.items import ParsedItem
    from .storage.store import Store


class SearchOptions(BaseModel):
    """A source's own search filters (its `*_search` arguments beyond the shared ones).

    Subclassed per source; the source's tool and `knowledge_search(filters={source: {...}})`
    both build their `SearchRequest` from it through `ChunkedSource.search_request`.
    """

    model_config = ConfigDict(extra="forbid")


Databases = Callable[[str], Awaitable["Store"]]
"""The caller's store of a named source, for filters that look into another source."""

SearchScope: TypeAlias = "tuple[list[Filter], tuple[FtsColumn, ...] | None]"
"""A search's filters, and the FTS columns it matches in (None: all)."""


@functools.cache
def search_response(result_model: type[R]) -> type[SearchResponse[R]]:
    """`SearchResponse[result_model]`, made once and kept. Pydantic holds the models it makes for
    `Generic[...]` only weakly, so one the garbage collector has freed was built again by
    whichever search came next: after start, often the first (`docs/performance.md`, "The first
    call, found")."""
    return SearchResponse[result_model]  # type: ignore[valid-type]


@functools.cache
def get_response(result_model: type[R]) -> type[GetResponse[R]]:
    """`GetResponse[result_model]`, made once and kept (as `search_response`)."""
    return GetResponse[result_model]  # type: ignore[valid-type]


class ChunkedSource(Generic[R]):
    name: ClassVar[SourceName]
    id_field: ClassVar[str]
    result_model: type[R]
    migrations: ClassVar[tuple[Migration, ...]]
    extensions: ClassVar[frozenset[str]]
    options_model: ClassVar[type[SearchOptions]] = SearchOptions
    # Title vs body bm25 weights; 3:1 ranked best on SciFact train (docs/performance.md, "Lexical search").
    weights: ClassVar[tuple[float, float]] = (3.0, 1.0)
    pipeline: ClassVar[SearchPipeline | None] = None
    """This source's search pipeline (None: the shared `DEFAULT_PIPELINE`, loaded at the first search)."""
    default_mode: ClassVar[RetrievalMode] = "snippet"
    """The retrieval mode of a get that names none (cards and prompts: `full`, the item itself)."""

    # -- what each source provides -------------------------------------------------------
    def parse_file(self, path: Path, raw: bytes) -> list[ParsedItem]:
        raise NotImplementedError

    def fields(self, item: aiosqlite.Row, chunk: aiosqlite.Row | None) -> dict[str, Any]:
        """Type-aware result fields of this source, from the item's meta and the hit chunk: each
        value of its field's type (a list, not a tuple; a nested model, not its dict), since the
        result is made without validation (`models.trusted`)."""
        return {}

    def thread_of(self, item: aiosqlite.Row) -> str | None:
        """The e-mail thread of an item row, as its result's `thread_id` says it (None: none)."""
        return None

    def loc(self, item: aiosqlite.Row, chunk: aiosqlite.Row) -> Loc:
        return trusted(Loc, {"chunk_index": chunk["chunk_index"], "approx_offset": chunk["start_offset"]})

    def anchor_from_loc(self, loc: Loc, chunks: list[aiosqlite.Row]) -> int | None:
        """The chunk index a loc points at, or None when it names none."""
        if loc.chunk_uuid:
            for c in chunks:
                if c["chunk_uuid"] == loc.chunk_uuid:
                    return int(c["chunk_index"])
        if loc.chunk_index is not None:
            if loc.chunk_index >= len(chunks):
                raise InvalidArgumentError("loc.chunk_index", f"must be 0..{len(chunks) - 1} for this item")
            return loc.chunk_index
        if loc.approx_offset is not None:
            for c in chunks:
                if c["start_offset"] <= loc.approx_offset < c["end_offset"]:
                    return int(c["chunk_index"])
            return len(chunks) - 1
        return None

    def search_filters(self, options: Any) -> list[Filter]:
        """The SQL filters of this source's search options (none by default)."""
        return []

    async def search_request(
        self,
        query: str,
        options: Any,
        *,
        limit: int = 10,
        offset: int = 0,
        snippet_length: int | None = None,
        order_by: OrderBy | None = None,
        databases: Databases | None = None,
        mode: SearchMode = "auto",
    ) -> SearchRequest:
        """The request for `query` with this source's `options` (an `options_model`, or None)."""
        filters, columns = await self.search_scope(options, databases)
        from .search.request import SearchRequest

        request = SearchRequest(query, limit, offset, snippet_length, order_by, filters, columns, mode)
        if options is not None and (filters or columns is not None):
            request.filter_names = tuple(options.model_dump(exclude_defaults=True))
        return request

    async def search_scope(self, options: Any, databases: Databases | None) -> SearchScope:
        """The filters and FTS columns of this source's `options` (or None): `search_filters` in
        every column by default; a source whose options pick columns, or look into another
        source, overrides this."""
        return (self.search_filters(options) if options is not None else []), None

    async def complete(self, results: list[R], databases: Databases | None) -> None:
        """Fill fields that need another source (chats: the linked character card)."""

    # -- shared behaviour ----------------------------------------------------------------
    def uri(self, item_id: str) -> str:
        return f"{self.name}://{item_id}"

    def sql(self, template: str, **kw: Any) -> str:
        return template.format(p=self.name, **kw)

    def result(self, item: aiosqlite.Row, chunk: aiosqlite.Row | None, **hit: Any) -> R:
        """This source's result for an item row and its hit chunk (None: the item itself)."""
        return trusted(self.result_model, self.result_values(item, chunk, hit))

    def result_values(
        self, item: aiosqlite.Row, chunk: aiosqlite.Row | None, hit: dict[str, Any]
    ) -> dict[str, Any]:
        """The fields of `result`'s model, each of its field's type (the model is made without
        validation, `models.trusted`): the row's columns, the hit's numbers (`hit`, emptied) as
        Python's, the source's `fields`."""
        values: dict[str, Any] = {
            "id": item["item_id"],
            "source": self.name,
            "uri": self.uri(item["item_id"]),
            "title": item["title"],
            "created_at": item["created_at"],
            "last_modified": item["last_modified"],
            "version": item["version"],
            "tags": [] if item["tags"] == "[]" else json.loads(item["tags"]),  # most items have none
            "loc": self.loc(item, chunk) if chunk is not None else None,
            "snippet": hit.pop("snippet", ""),
            "score": float(hit.pop("score", 0.0)),  # a fused score may be NumPy's
            "rank": int(hit.pop("rank", 1)),
        }
        values.update(hit)
        values.update(self.fields(item, chunk))
        return values

    async def search(self, store: Store, request: SearchRequest, defaults: Defaults) -> SearchResponse[R]:
        """Run `request` over `store` through this source's search pipeline."""
        model = search_response(self.result_model)
        pipeline = self.pipeline
        if pipeline is None:
            from .search.pipeline import DEFAULT_PIPELINE

            pipeline = DEFAULT_PIPELINE
        return await pipeline.run(self, store, request, defaults, model)

    async def get(
        self,
        store: Store,
        item_id: str,
        *,
        loc: Loc | None = None,
        query: str | None = None,
        retrieval: Retrieval | None = None,
        defaults: Defaults,
        databases: Databases | None = None,
    ) -> GetResponse[R]:
        """Read an item within the budget of `retrieval` (see `reading.get`); `databases` lets
        `complete` fill the meta before the result is measured against the budget."""
        model = get_response(self.result_model)
        from . import reading
        from .retrieval import with_default_mode

        retrieval = with_default_mode(retrieval, self.default_mode)
        return await reading.get(
            store,
            self,
            item_id,
            model,
            loc=loc,
            query=query,
            retrieval=retrieval,
            defaults=defaults,
            databases=databases,
        )

    async def load_item(self, store: Store, item_id: str) -> tuple[aiosqlite.Row, list[aiosqlite.Row]]:
        from . import reading

        return await reading.load_item(store, self, item_id)

    async def find_anchor(
        self,
        store: Store,
        item: aiosqlite.Row,
        chunks: list[aiosqlite.Row],
        loc: Loc | None,
        query: str | None,
    ) -> int:
        from . import reading

        return await reading.find_anchor(store, self, item, chunks, loc, query)

    def memory_indexes(self, db: Database) -> MemoryIndexes:
        """This source's in-memory copy of `db`'s index (see `search/lexical/memory_index.py`)."""
        from .search.lexical.memory import memory_indexes

        return memory_indexes(db, self)

    async def rank_in_memory(self, db: Database, query: str, want: int = 10) -> Ranked | None:
        """Only the ranking step of a search, from the memory copy (for `eval`)."""
        from .search.lexical.memory import rank_in_memory

        return await rank_in_memory(db, self, query, want)


class SourceEntry(BaseModel):
    """What a source package declares beside its `source`, so that nothing outside the package
    names it: `entry = SourceEntry(source=source, mime_type=..., label=...)` ends its
    `__init__.py`, and `registry.py` collects the entries."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    source: ChunkedSource[Any]
    """The source itself: name, id field, result model, migrations, parser, search options."""
    mime_type: str
    """The MIME type of an item's text read as an MCP resource (`<name>://<id>`)."""
    label: str
    """What one item is, for people: the title of the source's resource template."""
    uri_variable: str = "id"
    """The variable of its resource template (`notes://{id}`; chats: `{conversation_id}`)."""
    tools: bool = True
    """Whether the package has a `tools` module publishing its own `<name>_search`/`_get`
    (`knowledge_search`, `knowledge_get` and the resources reach every source without)."""
    render_get: Callable[[Any], str] | None = None
    """The text a get of one of its items sends, when not the shared `wire.render_get` (chats:
    the messages)."""

    @property
    def name(self) -> str:
        return self.source.name
