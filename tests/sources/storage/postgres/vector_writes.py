"""Vectors written straight into `pg_chunk_vectors` for chunks that need not exist: the tests'
way to lay out vectors (the product writes them with `vectors.write_batch`, for real chunks)."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from knowledge_mcp.sources.storage.postgres.embeddings.vector_mode import column, guarded, writable
from knowledge_mcp.sources.storage.postgres.pool import PgDatabase
from knowledge_mcp.sources.storage.postgres.schema import as_user, ensure_user

DELETE_SQL = "DELETE FROM pg_chunk_vectors WHERE user_id = %s AND chunk = %s"
INSERT_SQL = """INSERT INTO pg_chunk_vectors (user_id, source, chunk, item, window_index, embedding)
    SELECT %s, %s, %s, %s, u.n, u.v::{kind}
    FROM unnest(%s::int[], %s::text[]) AS u(n, v)"""


async def write_vectors(
    db: PgDatabase, user_id: str, source: str, chunk: int, item: int, windows: npt.NDArray[np.float32]
) -> None:
    """Replace a chunk's vectors by `windows` (shape `(n, DIM)`, unit length) in one transaction,
    as the product writes them (after a crash only once the HNSW index is gone; guarded)."""
    await ensure_user(db, user_id)
    await writable(db)
    found = await column(db)
    shape = "[{}]" if found.pgvector else "{{{}}}"
    texts = [shape.format(",".join(repr(float(x)) for x in w)) for w in windows]
    sql = INSERT_SQL.format(kind="vector" if found.pgvector else "real[]")
    async with db.transaction() as conn:
        await as_user(conn, user_id)
        await conn.execute(DELETE_SQL, (user_id, chunk))
        async with guarded(db, pgvector=found.pgvector and found.indexed):
            await conn.execute(sql, (user_id, source, chunk, item, list(range(len(texts))), texts))  # type: ignore[arg-type]
