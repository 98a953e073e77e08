"""doctor's line on how the PostgreSQL item store ranks vectors (imported only with the postgres
extra): pgvector with its index, exact by choice, or exact because pgvector crashed the server
(`sources/storage/postgres/vector_mode.py`: its HNSW index dropped) — a failure, with the fix."""

from __future__ import annotations

from typing import Any

import psycopg

from knowledge_mcp.sources.storage.postgres.embeddings.vector_mode import KIND_SQL, VectorColumn, column_state

from .findings import Finding

TOPIC = "PostgreSQL vectors"


def vectors_finding(conn: psycopg.Connection[Any]) -> Finding | None:
    """The item store's vector mode, or None before its schema exists."""
    row = conn.execute(KIND_SQL).fetchone()  # type: ignore[arg-type]  # a constant
    if row is None:
        return None
    column = VectorColumn(str(row[0]), bool(row[1]))
    state = column_state(column)
    if state.mode == "pgvector":
        return Finding(TOPIC, state.reason)
    if column.pgvector and not column.indexed:
        reason, _, fix = state.reason.partition(" Fix: ")
        return Finding(TOPIC, reason, "fail", fix)
    return Finding(TOPIC, state.reason, "note")
