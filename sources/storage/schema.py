"""The shared table layout of a chunked source (version 1), used by each source's first migration.

Every source has `<p>_items` (one row per searchable item), `<p>_chunks` (ordered spans of
the item's text; the unit of search) and `<p>_chunks_fts`, an external-content FTS5 index
over the chunks kept in sync by triggers. FTS-backed tables have an explicit INTEGER PRIMARY
KEY: implicit rowids are not stable across VACUUM. `<p>_files` remembers each imported file's
hash so an unchanged file is skipped and `--prune` knows what was imported.

Frozen: a later change to the layout is a new migration, never an edit here.
"""

from __future__ import annotations

TOKENIZER = "porter unicode61 remove_diacritics 2"


def chunked_tables_v1(p: str) -> str:
    return f"""
CREATE TABLE {p}_items (
    id INTEGER PRIMARY KEY,
    item_id TEXT NOT NULL UNIQUE,
    origin TEXT NOT NULL UNIQUE,
    source_path TEXT NOT NULL,
    title TEXT NOT NULL,
    content TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    created_at TEXT NOT NULL,
    last_modified TEXT NOT NULL,
    version INTEGER NOT NULL DEFAULT 1,
    tags TEXT NOT NULL DEFAULT '[]',
    meta TEXT NOT NULL DEFAULT '{{}}',
    imported_at TEXT NOT NULL
);
CREATE INDEX {p}_items_source_path ON {p}_items(source_path);
CREATE INDEX {p}_items_created ON {p}_items(created_at);
CREATE INDEX {p}_items_modified ON {p}_items(last_modified);

CREATE TABLE {p}_chunks (
    id INTEGER PRIMARY KEY,
    item_rowid INTEGER NOT NULL REFERENCES {p}_items(id) ON DELETE CASCADE,
    chunk_index INTEGER NOT NULL,
    chunk_uuid TEXT NOT NULL,
    field TEXT,
    start_offset INTEGER NOT NULL,
    end_offset INTEGER NOT NULL,
    title TEXT NOT NULL,
    body TEXT NOT NULL,
    meta TEXT NOT NULL DEFAULT '{{}}',
    UNIQUE (item_rowid, chunk_index)
);

CREATE VIRTUAL TABLE {p}_chunks_fts USING fts5(
    title, body, content='{p}_chunks', content_rowid='id', tokenize='{TOKENIZER}'
);
CREATE TRIGGER {p}_chunks_ai AFTER INSERT ON {p}_chunks BEGIN
    INSERT INTO {p}_chunks_fts(rowid, title, body) VALUES (new.id, new.title, new.body);
END;
CREATE TRIGGER {p}_chunks_ad AFTER DELETE ON {p}_chunks BEGIN
    INSERT INTO {p}_chunks_fts({p}_chunks_fts, rowid, title, body) VALUES ('delete', old.id, old.title, old.body);
END;
CREATE TRIGGER {p}_chunks_au AFTER UPDATE ON {p}_chunks BEGIN
    INSERT INTO {p}_chunks_fts({p}_chunks_fts, rowid, title, body) VALUES ('delete', old.id, old.title, old.body);
    INSERT INTO {p}_chunks_fts(rowid, title, body) VALUES (new.id, new.title, new.body);
END;

CREATE TABLE {p}_files (
    path TEXT PRIMARY KEY,
    file_hash TEXT NOT NULL,
    item_count INTEGER NOT NULL,
    imported_at TEXT NOT NULL
);
"""  # noqa: E501 - released DDL is frozen, its long trigger lines included


def page_index_v2(p: str) -> str:
    """A covering index for ranking pages: an item's `last_modified` (the tie-break, and the whole
    order of `recent`) without reading the row, whose `content` column comes first and can run
    to many overflow pages."""
    return f"CREATE INDEX {p}_items_page ON {p}_items(id, last_modified);\n"


def file_stat_v3(p: str) -> str:
    """Each imported file's size and modification time (ns), so a re-import skips a file whose
    both are unchanged without reading it. NULL (older rows, or a file modified in the last
    seconds before its import) means: read and hash it."""
    return (
        f"ALTER TABLE {p}_files ADD COLUMN size INTEGER;\n"
        f"ALTER TABLE {p}_files ADD COLUMN mtime_ns INTEGER;\n"
    )


def dense_vectors_v4(p: str) -> str:
    """Sentence-embedding vectors of the chunks (`search/dense/`). `<p>_vectors` holds each
        embedded text's window vectors (float32, concatenated) keyed by the hash of the model and
        the text, so a re-imported chunk with unchanged text is never embedded again;
        `<p>_chunk_vectors` says which text each chunk has vectors for. A chunk without a row there
        is waiting to be embedded; deleting or editing a chunk forgets its row (vectors no chunk
        uses any more are removed by the next `embed`). Idempotent (IF NOT EXISTS): a database whose
    version was set back (to re-run a later migration) keeps its vectors."""
    return f"""
CREATE TABLE IF NOT EXISTS {p}_vectors (
    id INTEGER PRIMARY KEY,
    text_hash TEXT NOT NULL UNIQUE,
    windows INTEGER NOT NULL,
    vectors BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS {p}_chunk_vectors (
    chunk_id INTEGER PRIMARY KEY,
    text_hash TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS {p}_chunk_vectors_hash ON {p}_chunk_vectors(text_hash);
CREATE TRIGGER IF NOT EXISTS {p}_chunks_vd AFTER DELETE ON {p}_chunks BEGIN
    DELETE FROM {p}_chunk_vectors WHERE chunk_id = old.id;
END;
CREATE TRIGGER IF NOT EXISTS {p}_chunks_vu AFTER UPDATE OF title, body ON {p}_chunks BEGIN
    DELETE FROM {p}_chunk_vectors WHERE chunk_id = old.id;
END;
"""


def import_folders_v5(p: str) -> str:
    """The files and folders a user imported (`Importer.run` records each given path), so the
    server knows where the user's files live: the notes folder new notes are written into, and
    the folders `serve --watch` watches (every source)."""
    return f"""
CREATE TABLE IF NOT EXISTS {p}_folders (
    path TEXT PRIMARY KEY,
    is_folder INTEGER NOT NULL,
    imported_at TEXT NOT NULL
);
"""
