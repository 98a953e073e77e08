"""Chunks' dense vectors in the PostgreSQL store, searched with pgvector where it is installed.

`pg_chunk_vectors` (`schema.VECTORS_V3`, partitioned by user like the rest, with the same
row-level policy) holds each embedded window of a chunk (a chunk's text may be embedded as several
windows, as `search/dense/` does on SQLite). With the `vector` extension the column is
`vector(384)` (the bundled MiniLM's size) under an HNSW index (cosine), and a search is one
`ORDER BY embedding <=> query` over the user's partition; without it the column is `real[]`
and a search reads the source's vectors and ranks them exactly here (numpy), as the SQLite
store's exact dense stage does. Each item counts once, by its best window.

Writing vectors (the embedding worker) and the hybrid fuse stage over PostgreSQL are not wired
yet: this is the store and its search.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from ..db import validate_user_id
from .pool import PgDatabase
from .schema import as_user, ensure_user

KIND_SQL = """SELECT format_type(atttypid, atttypmod) AS kind FROM pg_attribute
    WHERE attrelid = 'pg_chunk_vectors'::regclass AND attname = 'embedding'"""
DELETE_SQL = "DELETE FROM pg_chunk_vectors WHERE user_id = %s AND chunk = %s"
INSERT_SQL = """INSERT INTO pg_chunk_vectors (user_id, source, chunk, item, window_index, embedding)
    SELECT %s, %s, %s, %s, u.n, u.v::{kind}
    FROM unnest(%s::int[], %s::text[]) AS u(n, v)"""
NEAREST_SQL = """SELECT chunk, item, 1 - (embedding <=> %(q)s::vector) AS cosine FROM pg_chunk_vectors
    WHERE user_id = %(user)s AND source = %(source)s
    ORDER BY embedding <=> %(q)s::vector LIMIT %(limit)s"""
ALL_SQL = "SELECT chunk, item, embedding FROM pg_chunk_vectors WHERE user_id = %s AND source = %s"
SEARCH_DEPTH = 4
"""Windows read per item wanted (several windows of one item may come first)."""

Floats = npt.NDArray[np.float32]


@dataclass(frozen=True)
class Nearest:
    """An item's best window: its chunk, and the cosine similarity there."""

    item: int
    chunk: int
    cosine: float


async def has_pgvector(db: PgDatabase) -> bool:
    """Whether the store's vectors are pgvector's (else `real[]`, searched exactly here)."""
    known = db.caches.get("pg_vector_kind")
    if known is None:
        row = await db.fetchone(KIND_SQL)
        known = db.caches["pg_vector_kind"] = str(row["kind"]) if row else ""
    return str(known).startswith("vector")


def _literal(vector: Floats) -> str:
    """A vector as text both `vector` and `real[]` read (`[..]` for one, `{..}` for the other)."""
    return ",".join(repr(float(x)) for x in vector)


async def write_vectors(
    db: PgDatabase, user_id: str, source: str, chunk: int, item: int, windows: Floats
) -> None:
    """Replace a chunk's vectors by `windows` (shape `(n, DIM)`, unit length) in one transaction."""
    user_id = validate_user_id(user_id)
    await ensure_user(db, user_id)
    pgvector = await has_pgvector(db)
    texts = [("[{}]" if pgvector else "{{{}}}").format(_literal(w)) for w in windows]
    sql = INSERT_SQL.format(kind="vector" if pgvector else "real[]")
    async with db.transaction() as conn:
        await as_user(conn, user_id)
        await conn.execute(DELETE_SQL, (user_id, chunk))
        await conn.execute(sql, (user_id, source, chunk, item, list(range(len(texts))), texts))  # type: ignore[arg-type]


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
            params["limit"] = str(max(1, want) * SEARCH_DEPTH)
            await conn.execute("SET LOCAL hnsw.ef_search = 200")
            rows = await (await conn.execute(NEAREST_SQL, params)).fetchall()
            return _best_per_item([(int(c), int(i), float(s)) for c, i, s in rows], want)
        rows = await (await conn.execute(ALL_SQL, (user_id, source))).fetchall()
    return _exact(rows, query, want)


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
