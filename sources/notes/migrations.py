"""Schema history of the notes database. Append-only once released."""

from __future__ import annotations

from ..storage.db import Migration
from ..storage.schema import (
    chunked_tables_v1,
    dense_vectors_v4,
    file_stat_v3,
    import_folders_v5,
    page_index_v2,
)

MIGRATIONS = (
    Migration(1, "notes items, chunks and FTS index", chunked_tables_v1("notes")),
    Migration(2, "covering index for ranking pages", page_index_v2("notes")),
    Migration(3, "size and modification time of imported files", file_stat_v3("notes")),
    Migration(4, "vectors of the chunks for semantic search", dense_vectors_v4("notes")),
    Migration(5, "the files and folders imported", import_folders_v5("notes")),
)
