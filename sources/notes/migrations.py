"""Schema history of the notes database. Append-only once released."""

from __future__ import annotations

from ..db import Migration
from ..schema import chunked_tables_v1

MIGRATIONS = (Migration(1, "notes items, chunks and FTS index", chunked_tables_v1("notes")),)
