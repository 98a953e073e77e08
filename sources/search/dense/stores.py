"""Which `VectorStore` holds a searched source's vectors."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...storage.db import Database, Migration
from ...storage.vector_store import VectorStore
from ..request import SearchedSource
from .sqlite.store import SqliteVectorStore


def vector_store(db: Database, source: SearchedSource, migrations: Sequence[Migration] = ()) -> VectorStore:
    """The vectors of `source` in `db`: a SQLite source database (`migrations`: the source's,
    with which a background embedding run opens it again), or the PostgreSQL store's `PgItems`
    of one user's source. The only place the dense stages tell the stores apart: the lead
    hangs this on the item Store at merge."""
    items: Any = db
    if getattr(items, "item_store", "sqlite") == "postgresql":
        from ...storage.postgres.embeddings.store import PgVectorStore  # psycopg: only with that store

        return PgVectorStore(items.pg, items.user_id, items.source)
    return SqliteVectorStore(db, source, migrations)
