"""Schema history of the chats database. Append-only once released."""

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
    Migration(1, "chats items (conversations), chunks (messages) and FTS index", chunked_tables_v1("chats")),
    Migration(2, "covering index for ranking pages", page_index_v2("chats")),
    Migration(3, "size and modification time of imported files", file_stat_v3("chats")),
    Migration(4, "vectors of the chunks for semantic search", dense_vectors_v4("chats")),
    Migration(5, "the files and folders imported (what `serve --watch` watches)", import_folders_v5("chats")),
)
