"""Chunks' dense vectors in the PostgreSQL store, searched with pgvector where it is installed.

`pg_chunk_vectors` (`schema.VECTORS_V3`, partitioned by user like the rest, with the same
row-level policy) holds each embedded window of a chunk (a chunk's text may be embedded as several
windows, as `search/dense/` does on SQLite). With the `vector` extension the column is
`vector(384)` (the bundled MiniLM's size) under an HNSW index (cosine), and a search is one
`ORDER BY embedding <=> query` over the user's partition; without it the column is `real[]`
and a search reads the source's vectors and ranks them exactly here (numpy), as the SQLite
store's exact dense stage does. Each item counts once, by its best window. A pgvector that
kills the server (built for another CPU) switches the database to the exact ranking of its
`vector` column (`vector_mode.py`).

`store.PgVectorStore` is the dense stages' view of it: embedding fills the missing vectors
(`missing`, `write_batch`: import `--embed`, the server's background worker), the dense
retriever and the fuser search them (`nearest`, and `cosines` for the fuser's other
candidates). `coverage` says whether a source is complete (searches are lexical, `degraded`,
until it is).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from ...db import validate_user_id
from ...vector_store import Coverage
from ..pool import PgDatabase, read_as, saw_generation
from ..schema import as_user, ensure_user
from .vector_mode import column, guarded, writable
from .vector_mode import has_pgvector as has_pgvector  # where the dense stage and tests read it

BATCH_SQL = """INSERT INTO pg_chunk_vectors (user_id, source, chunk, item, window_index, embedding)
    SELECT %(user)s, %(source)s, u.c, u.i, u.n, u.v::{kind}
    FROM unnest(%(chunks)s::bigint[], %(items)s::bigint[], %(ns)s::int[], %(vs)s::text[]) AS u(c, i, n, v)
    WHERE EXISTS (SELECT 1 FROM pg_chunks AS k WHERE k.user_id = %(user)s AND k.id = u.c)
    ON CONFLICT DO NOTHING"""
"""A batch's windows; a chunk replaced (deleted) since it was read gets none."""
NEAREST_SQL = """SELECT chunk, item, 1 - (embedding <=> %(q)s::vector) AS cosine FROM pg_chunk_vectors
    WHERE user_id = %(user)s AND source = %(source)s
    ORDER BY embedding <=> %(q)s::vector, chunk LIMIT %(limit)s"""
ALL_SQL = "SELECT chunk, item, embedding FROM pg_chunk_vectors WHERE user_id = %s AND source = %s"
OF_ITEMS_SQL = """SELECT chunk, item, {cosine} AS cosine FROM pg_chunk_vectors
    WHERE user_id = %(user)s AND source = %(source)s AND item = ANY(%(items)s::bigint[])"""
COVERAGE_SQL = """SELECT
    (SELECT count(*) FROM pg_chunks WHERE user_id = %(user)s AND source = %(source)s) AS chunks,
    (SELECT count(*) FROM pg_chunk_vectors
        WHERE user_id = %(user)s AND source = %(source)s AND window_index = 0) AS embedded"""
STAMP_SQL = "SELECT generation FROM pg_corpus_stats WHERE user_id = %s AND source = %s"
MISSING_SQL = """SELECT c.id, c.item, c.title, c.body FROM pg_chunks AS c
    WHERE c.user_id = %s AND c.source = %s AND c.id > %s AND NOT EXISTS (
        SELECT 1 FROM pg_chunk_vectors AS v WHERE v.user_id = c.user_id AND v.chunk = c.id)
    ORDER BY c.id LIMIT %s"""
ITERATIVE_SQL = "SET LOCAL hnsw.iterative_scan = strict_order"
"""pgvector 0.8: the index scan goes on past `ef_search` until the `WHERE` (the source) has let
through the rows asked for (the user's partition holds all five sources)."""
SEARCH_DEPTH = 4
"""Windows read per item wanted (several windows of one item may come first); read again, twice
as many, while the items found are fewer than wanted and more windows are there."""
MAX_WINDOWS = 50_000

Floats = npt.NDArray[np.float32]


@dataclass(frozen=True)
class Nearest:
    """An item's best window: its chunk, and the cosine similarity there."""

    item: int
    chunk: int
    cosine: float


def _literal(vector: Floats) -> str:
    """A vector as text both `vector` and `real[]` read (`[..]` for one, `{..}` for the other)."""
    return ",".join(repr(float(x)) for x in vector)


async def coverage(db: PgDatabase, user_id: str, source: str) -> Coverage:
    """How many of the user's chunks of `source` have vectors."""
    rows = await _as_user(db, user_id, COVERAGE_SQL, {"user": user_id, "source": source})
    return Coverage(int(rows[0][0]), int(rows[0][1]))


async def stamp(db: PgDatabase, user_id: str, source: str) -> tuple[int | None]:
    """The source's generation (one row, moved by every write; None: no row yet), noted as seen
    (`pool.saw_generation`)."""
    rows = await _as_user(db, user_id, STAMP_SQL, (user_id, source))
    generation = int(rows[0][0]) if rows else None
    saw_generation(db, user_id, source, generation)
    return (generation,)


async def missing(db: PgDatabase, user_id: str, source: str, after: int, limit: int) -> list[Any]:
    """Up to `limit` chunks past id `after` without vectors: (id, item, title, body)."""
    return await _as_user(db, user_id, MISSING_SQL, (user_id, source, after, limit))


async def write_batch(
    db: PgDatabase, user_id: str, source: str, chunks: list[tuple[int, int, Floats]]
) -> None:
    """Store each (chunk, item, windows) in one transaction; chunks deleted meanwhile are left
    out, chunks given vectors meanwhile (another worker) keep theirs."""
    if not chunks:
        return
    user_id = validate_user_id(user_id)
    await ensure_user(db, user_id)
    await writable(db)
    found = await column(db)
    pgvector = found.pgvector
    shape = "[{}]" if pgvector else "{{{}}}"
    params: dict[str, Any] = {"user": user_id, "source": source}
    params.update(chunks=[], items=[], ns=[], vs=[])
    for chunk, item, windows in chunks:
        for n, window in enumerate(windows):
            params["chunks"].append(chunk)
            params["items"].append(item)
            params["ns"].append(n)
            params["vs"].append(shape.format(_literal(window)))
    async with db.transaction() as conn:
        await as_user(conn, user_id)
        async with guarded(db, pgvector=found.pgvector and found.indexed):
            await conn.execute(BATCH_SQL.format(kind="vector" if pgvector else "real[]"), params)


async def nearest(
    db: PgDatabase, user_id: str, source: str, query: Floats, want: int, *, exact: bool = False
) -> list[Nearest]:
    """The `want` items whose best window is nearest `query` (unit length), best first: with
    pgvector through its index (approximate), else (or with `exact`) by an exact scan."""
    user_id = validate_user_id(user_id)
    async with db.transaction() as conn:
        await as_user(conn, user_id)
        if await has_pgvector(db) and not exact:
            params = {"q": f"[{_literal(query)}]", "user": user_id, "source": source}
            await conn.execute("SET LOCAL hnsw.ef_search = 200")
            await conn.execute(ITERATIVE_SQL)
            limit = max(1, want) * SEARCH_DEPTH
            while True:
                async with guarded(db):
                    rows = await (await conn.execute(NEAREST_SQL, {**params, "limit": limit})).fetchall()
                found = _best_per_item([(int(c), int(i), float(s)) for c, i, s in rows], want)
                if len(found) >= want or len(rows) < limit or limit >= MAX_WINDOWS:
                    return found
                limit *= 2
        rows = await (await conn.execute(ALL_SQL, (user_id, source))).fetchall()
    return _exact(rows, query, want)


async def cosines(
    db: PgDatabase, user_id: str, source: str, query: Floats, items: list[int]
) -> list[Nearest]:
    """Each of `items`' best window's cosine with `query` (items without vectors left out)."""
    if not items:
        return []
    pgvector = await has_pgvector(db)
    cosine = "1 - (embedding <=> %(q)s::vector)" if pgvector else "embedding"
    params = {"user": user_id, "source": source, "items": items, "q": f"[{_literal(query)}]"}
    rows = await _as_user(db, user_id, OF_ITEMS_SQL.format(cosine=cosine), params, vector=pgvector)
    if not pgvector:
        return _exact(rows, query, len(items))
    found = sorted(((int(c), int(i), float(s)) for c, i, s in rows), key=lambda r: (-r[2], r[0]))
    return _best_per_item(found, len(items))


async def _as_user(db: PgDatabase, user_id: str, sql: str, params: Any, *, vector: bool = False) -> list[Any]:
    """`sql`'s rows as `user_id` in one round trip (`pool.read_as`); `vector`: a pgvector
    statement (`guarded`)."""
    user_id = validate_user_id(user_id)
    async with guarded(db, pgvector=vector):
        _, rows = await read_as(db, user_id, sql, params)
    return rows


def _exact(rows: list[Any], query: Floats, want: int) -> list[Nearest]:
    if not rows:
        return []
    matrix = np.array([_floats(r[2]) for r in rows], dtype=np.float32)
    scores = matrix @ query.astype(np.float32)
    order = np.argsort(-scores, kind="stable")
    return _best_per_item([(int(rows[n][0]), int(rows[n][1]), float(scores[n])) for n in order], want)


def _floats(value: Any) -> list[float]:
    """A stored embedding as floats (pgvector's text form `[..]` when no adapter is loaded)."""
    if isinstance(value, str):
        return [float(x) for x in value.strip("[]").split(",")]
    return [float(x) for x in value]


def _best_per_item(found: list[tuple[int, int, float]], want: int) -> list[Nearest]:
    best: dict[int, Nearest] = {}
    for chunk, item, cosine in found:
        if item not in best:
            best[item] = Nearest(item, chunk, cosine)
            if len(best) == want:
                break
    return list(best.values())
