"""Schema history of the characters database. Append-only once released."""

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
        "character cards, one chunk per card field, and FTS index",
        chunked_tables_v1("characters")
        + "CREATE INDEX characters_items_title ON characters_items(lower(title));\n",
    ),
    Migration(2, "covering index for ranking pages", page_index_v2("characters")),
    Migration(3, "size and modification time of imported files", file_stat_v3("characters")),
    # Items now carry a summary: forget the files' hashes, so the next import re-reads every
    # card (an unchanged file would be skipped) and updates the items that changed.
    Migration(4, "re-read every file on the next import (summaries)", "DELETE FROM characters_files;\n"),
    Migration(5, "vectors of the chunks for semantic search", dense_vectors_v4("characters")),
    Migration(
        6, "the files and folders imported (what `serve --watch` watches)", import_folders_v5("characters")
    ),
)
