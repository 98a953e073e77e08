"""How common each query term is in a source's index, cached until the database changes.

FTS5 keeps no document frequencies: counting a term's rows walks its whole doclist. The
search planner (`search_plan.py`) needs them on every query to decide which terms can find
candidates cheaply, so they are counted once and kept per database until it changes: another
connection's commit moves `PRAGMA data_version`, this connection's own writes move
`total_changes`. Both are read in the same round trip as the counts of uncached terms.
"""

from __future__ import annotations

from dataclasses import dataclass

from cachetools import LRUCache

from .db import Database
from .search_sql import ident

CACHE_TERMS = 20_000


@dataclass(frozen=True)
class IndexStats:
    chunks: int
    """Rows in the source's FTS index."""
    items: int
    """Items in the source."""
    df: dict[str, int]
    """Rows matching each FTS term expression (a word, phrase or prefix)."""


class TermStats:
    """Per-database cache of the chunk count and each term's row count."""

    def __init__(self, table: str) -> None:
        self.table = ident(table)
        self._version: tuple[int, int] | None = None
        self._chunks = 0
        self._items = 0
        self._df: LRUCache[str, int] = LRUCache(CACHE_TERMS)

    def _sql(self, uncached: list[str], with_chunks: bool) -> str:
        p = self.table
        parts = ["(SELECT data_version FROM pragma_data_version())"]
        parts.append(f"(SELECT count(*) FROM {p}_chunks)" if with_chunks else "-1")
        parts.append(f"(SELECT count(*) FROM {p}_items)" if with_chunks else "-1")
        parts += [f"(SELECT count(*) FROM {p}_chunks_fts WHERE {p}_chunks_fts MATCH ?)"] * len(uncached)
        return "SELECT " + ", ".join(parts)

    async def lookup(self, db: Database, terms: list[str]) -> IndexStats:
        """The chunk count and the row count of every term, counting only what is not cached."""
        for _ in range(2):
            uncached = [t for t in dict.fromkeys(terms) if t not in self._df]
            fresh = self._version is None
            row = await db.fetchone(self._sql(uncached, fresh), uncached)
            assert row is not None
            version = (int(row[0]), db.conn.total_changes)
            if version != self._version and not fresh:
                # The index changed since the cache was filled: forget it and count again.
                self._version = None
                self._df.clear()
                continue
            self._version = version
            if fresh:
                self._chunks, self._items = int(row[1]), int(row[2])
            for term, count in zip(uncached, row[3:], strict=True):
                self._df[term] = int(count)
            break
        return IndexStats(self._chunks, self._items, {t: self._df.get(t, 0) for t in terms})
