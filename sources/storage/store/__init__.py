"""`Store`: one user's items of one source, as the search and get stages read them.

Every stage is written once against this protocol; each store answers with its own SQL:
`store.sqlite.SqliteStore` (the user's SQLite file: FTS5 and its in-memory copy) and
`postgres.store.PgStore` (the shared PostgreSQL store: bm25 from postings). Neither pretends to
be the other. The server hands a source's tools the caller's store, chosen once at start-up.

Rows are read by column name, as the SQLite tables name them: an item's (`id` is its rowid,
`tags` and `meta` are JSON text) and a chunk's (`item_rowid`, `chunk_index`, `start_offset`,
`body`…). A search page row is a `Hit`, which both stores make: the item's columns and the
hit's `chunk_rowid`, bm25 `b`, matching chunks `n` and estimated `total` by name, and the hit
chunk's columns as `chunk`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from ...search.lexical.sql import RankedRow, SearchSpec
    from ...search.lexical.term_stats import IndexStats
    from ...search.query import ParsedQuery
    from ...search.request import Found, SearchContext, SearchedSource
    from ..db import Migration
    from ..vector_store import VectorStore

Row = Any
"""A row read by column name (`row["title"]`)."""
HIT_KEYS = ("chunk_rowid", "b", "n", "total")


class Hit(dict[str, Any]):
    """A search page row: the item's columns and the hit's (`HIT_KEYS`) by name, the hit chunk's
    columns as `chunk`. A further passage of an item (`per_item`) has no `n` and `total`.

    A dict (the hit's keys over the item's), not a mapping that looks in two: a result reads a
    dozen columns of its row, each then a lookup in C rather than a method call in Python."""

    __slots__ = ("chunk",)

    def __init__(
        self,
        item: Mapping[str, Any] | Iterable[tuple[str, Any]],
        chunk: Mapping[str, Any],
        b: float,
        n: int | None,
        total: int | None,
    ) -> None:
        super().__init__(item)
        self.chunk = chunk
        self["chunk_rowid"], self["b"], self["n"], self["total"] = chunk["id"], b, n, total

    def __repr__(self) -> str:
        return f"Hit({self.get('item_id')!r}, chunk {self['chunk_rowid']}, b={self['b']})"


class Store(Protocol):
    """One user's one source: its items and chunks, ranked and read."""

    @property
    def source(self) -> str:
        """The source's name (`notes`, `media`…)."""
        ...

    @property
    def path(self) -> Path:
        """The user's SQLite file of the source (or where it would be): their glossary is beside it."""
        ...

    async def item(self, item_id: str) -> Row | None:
        """The item with this id (all its columns, `content` too), or None."""
        ...

    async def chunks_of(self, item_rowid: int) -> list[Row]:
        """The item's chunks in order."""
        ...

    async def best_chunk(self, query: ParsedQuery, item_rowid: int) -> int | None:
        """The rowid of the item's chunk `query` ranks best (bm25: a get's anchor), or None."""
        ...

    async def lexical(self, ctx: SearchContext, query: ParsedQuery) -> Found:
        """The page's rows ranked by bm25 over the source's chunks, under the request's filters,
        columns, order and offset (one row past the page when there are more)."""
        ...

    async def ranked_page(self, ctx: SearchContext, spec: SearchSpec, window: list[RankedRow]) -> list[Row]:
        """The page rows of items ranked elsewhere (the fused ranking), in `window`'s order,
        `spec`'s item filters and paging applied."""
        ...

    async def passages(self, ctx: SearchContext, query: ParsedQuery, rows: list[Row], more: int) -> list[Row]:
        """Up to `more` further matching chunks of each page row's item, best first, as page
        rows (`per_item`); in the request's columns and under its chunk filters."""
        ...

    async def index_stats(self, query: ParsedQuery, together: Sequence[str] = ()) -> IndexStats:
        """The source's chunk and item counts and the chunk counts of `query`'s terms.
        `together`: the sources (this one among them) whose stores ask the same at the same
        moment (knowledge_search's shared scale), which a store may read in one go."""
        ...

    # -- the sources' and the server's own small reads ------------------------------------
    async def item_by_title(self, title: str) -> Row | None:
        """The first item (in import order) whose title is `title`, case-insensitively."""
        ...

    async def item_by_origin(self, origin: str) -> Row | None:
        """The item imported from `origin` (its stored path, or path and part)."""
        ...

    async def items(self) -> list[Row]:
        """Every item, in import order (a small source's: the prompt library)."""
        ...

    async def titles(self, item_ids: Sequence[str] | None = None) -> list[Row]:
        """`item_id` and `title` of these items (None: of every item, in import order)."""
        ...

    async def recent(self, limit: int) -> list[Row]:
        """`item_id`, `title`, `last_modified` of the `limit` latest modified items (ties: by id)."""
        ...

    async def has_chunk(self, item_id: str, chunk_uuid: str) -> bool:
        """Whether the item still has the chunk of that uuid."""
        ...

    async def counts_by(self, key: str) -> list[tuple[Any, int]]:
        """How many items have each value of their meta `key`, the most common first."""
        ...

    async def field_spans(self, fields: Sequence[str]) -> list[Row]:
        """Per item and field (of `fields`): `item_rowid`, `field`, its chunks' first `start`
        and last `end` offset."""
        ...

    def vectors(self, source: SearchedSource, migrations: Sequence[Migration] = ()) -> VectorStore:
        """The same items' vectors (`vector_store.VectorStore`); `migrations`: the source's, with
        which a background embedding run opens a SQLite file again."""
        ...
