"""Vectors for the split eval's hybrid run without embedding SciFact again (~25 minutes here).

Every SciFact document is already embedded as a note in a data dir where `knowledge-mcp eval
--retrieval hybrid --data-dir D` ran. The split holds the same documents as notes, web pages,
chat messages, cards and prompts: each of their chunks *borrows* the vectors of the same
document's chunk at the same position (the last one when the note has fewer chunks). The
borrowed vector is that of the note's text (its title and body), not of the card's or the chat's
own wording, which differs only in how the title is attached: an approximation, stated in the
report. The synthetic distractors are embedded for real, once, in the single index, and lent to
the split's sources the same way. Stored as the sources store their own (keyed by the hash of
the chunk's own text), so a search cannot tell them apart.
"""

from __future__ import annotations

import re
from pathlib import Path

from knowledge_mcp.sources.registry import SOURCES
from knowledge_mcp.sources.search.dense.embedder import embedder, unavailable
from knowledge_mcp.sources.search.dense.indexing import embed_missing
from knowledge_mcp.sources.search.dense.sqlite import vectors
from knowledge_mcp.sources.search.dense.sqlite.store import SqliteVectorStore
from knowledge_mcp.sources.storage.db import Database

_SPLIT_DISTRACTOR = re.compile(r"x[0-9]+")
Lender = dict[tuple[str, int], tuple[int, bytes]]
"""(document key, chunk position) → (windows, float32 vectors) of an embedded chunk."""

CHUNKS_SQL = """SELECT c.id, c.title, c.body, c.chunk_index, i.origin FROM {p}_chunks AS c
JOIN {p}_items AS i ON i.id = c.item_rowid ORDER BY c.id"""
LENT_SQL = """SELECT i.origin, c.chunk_index, v.windows, v.vectors FROM {p}_chunks AS c
JOIN {p}_items AS i ON i.id = c.item_rowid
JOIN {p}_chunk_vectors AS cv ON cv.chunk_id = c.id JOIN {p}_vectors AS v ON v.text_hash = cv.text_hash"""


def document_key(origin: str, source: str = "notes") -> str:
    """Which document an item holds, from its origin: a BEIR id (`scifact#123`, `…/d123.md`,
    `conversations.json#d123`) is `d123`; a distractor (`x12.html` in media, `xmedia12.md` in
    the single index) is `xmedia12`."""
    head, _, tail = origin.rpartition("#")
    if head and not any(sep in head for sep in "/\\"):
        return f"d{tail}"  # the eval's import: `<dataset>#<id>`
    tail = tail if head else Path(origin).stem
    if _SPLIT_DISTRACTOR.fullmatch(tail):
        return f"x{source}{tail[1:]}"
    return tail


async def lender(db: Database, table: str) -> Lender:
    """Every embedded chunk of `db`'s `table`, by document key and position."""
    rows = await db.fetchall(vectors.sql(LENT_SQL, table))
    return {(document_key(str(r[0]), table), int(r[1])): (int(r[2]), bytes(r[3])) for r in rows}


def lent(lent_by: Lender, key: str, position: int) -> tuple[int, bytes] | None:
    """The lender's chunk at `position` of document `key`, or its last one before it."""
    for at in range(position, -1, -1):
        found = lent_by.get((key, at))
        if found is not None:
            return found
    return None


async def borrow(db: Database, table: str, lent_by: Lender, model_id: str) -> int:
    """Give every chunk of `db`'s `table` without vectors its document's lent vectors; how many
    chunks got them."""
    new: dict[str, tuple[int, bytes]] = {}
    links: list[tuple[int, str]] = []
    for chunk_id, title, body, position, origin in await db.fetchall(vectors.sql(CHUNKS_SQL, table)):
        found = lent(lent_by, document_key(str(origin), table), int(position))
        if found is None:
            continue
        digest = vectors.text_hash(model_id, vectors.embedded_text(str(title), str(body)))
        new.setdefault(digest, found)
        links.append((int(chunk_id), digest))
    async with db.transaction() as conn:
        await conn.executemany(
            vectors.sql(vectors.INSERT_VECTORS_SQL, table), [(h, w, v) for h, (w, v) in new.items()]
        )
        await conn.executemany(vectors.sql(vectors.INSERT_CHUNK_SQL, table), links)
    return len(links)


async def embed_rest(db: Database, table: str) -> int:
    """Embed what nothing lent (the distractors of the single index); the percentage of the
    table's chunks that have vectors after."""
    model = embedder()
    if model is None:
        raise RuntimeError(f"--retrieval hybrid: {unavailable()}")
    await embed_missing(SqliteVectorStore(db, SOURCES[table]), model)
    return (await vectors.coverage(db, table)).percent


def model_id() -> str:
    model = embedder()
    if model is None:
        raise RuntimeError(f"--retrieval hybrid: {unavailable()}")
    return model.model_id
