"""Schema history of the media database. Append-only once released."""

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
    Migration(
        1,
        "media items, chunks and FTS index",
        chunked_tables_v1("media")
        + "CREATE INDEX media_items_type ON media_items(json_extract(meta, '$.media_type'));\n",
    ),
    Migration(2, "covering index for ranking pages", page_index_v2("media")),
    Migration(3, "size and modification time of imported files", file_stat_v3("media")),
    Migration(4, "vectors of the chunks for semantic search", dense_vectors_v4("media")),
    Migration(5, "the files and folders imported (what `serve --watch` watches)", import_folders_v5("media")),
)
