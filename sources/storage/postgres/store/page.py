"""The page rows of a PostgreSQL ranking: each ranked item's hit, ordered as the SQLite page is."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ....search.lexical.sql import RankedRow
from ...store import Hit
from . import rows as statements

if TYPE_CHECKING:
    from . import PgStore


async def page_rows(
    store: PgStore, ranked: Any, passage: bool = False, read: list[tuple[Any, ...]] | None = None
) -> list[Hit]:
    """One `Hit` per ranked item (a `passage` has no `n` and `total`); `read`: the ranking's rows
    with the hits' columns (`rows.RANKED_HITS_SQL`), else the hits are read here."""
    item_ids = [int(i) for i in ranked.item_rowids]
    chunk_ids = [int(c) for c in ranked.chunk_rowids]
    if read is not None:
        found = statements.split([r[statements.RANKED_COLUMNS :] for r in read])
    else:
        found = await store.hits(item_ids, chunk_ids)
    rows: list[Hit] = []
    for n, chunk in enumerate(chunk_ids):
        if chunk not in found:
            continue  # replaced between the ranking and the read: the next search has it
        item_row, chunk_row = found[chunk]
        counts = (None, None) if passage else (int(ranked.matching_chunks[n]), int(ranked.total))
        rows.append(Hit(item_row, chunk_row, float(ranked.bm25[n]), *counts))
    return rows


def ordered(rows: list[Hit], recent: bool) -> list[Hit]:
    """The SQLite page's order: bm25, newest, item rowid (recent: newest, bm25, item rowid). Pure."""
    rows = sorted(rows, key=lambda r: int(r["id"]))
    if recent:
        rows.sort(key=lambda r: float(r["b"]))
        rows.sort(key=lambda r: str(r["last_modified"]), reverse=True)
    else:
        rows.sort(key=lambda r: str(r["last_modified"]), reverse=True)
        rows.sort(key=lambda r: float(r["b"]))
    return rows


class Window:
    """A fused window in the shape `page_rows` reads (bm25's `Ranked`)."""

    def __init__(self, ranked: list[RankedRow]) -> None:
        self.item_rowids = [r[0] for r in ranked]
        self.chunk_rowids = [r[1] for r in ranked]
        self.bm25 = [r[2] for r in ranked]
        self.matching_chunks = [r[3] for r in ranked]
        self.total = len(ranked)
