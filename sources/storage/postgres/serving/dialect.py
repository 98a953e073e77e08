"""The sources' own small SQLite statements, run against the PostgreSQL item store. Pure.

A source reads its tables directly in a few places (a prompt by name, the character card a chat
links to, media's type counts). `to_postgres` rewrites such a statement for the store: each
`<source>_items` / `<source>_chunks` becomes the user's rows of that source with the SQLite
tables' columns (the user is the transaction's, set by `as_user`: row-level security holds it
too), `json_extract(x, '$.key')` becomes `x::jsonb ->> 'key'`, and `?` placeholders become
psycopg's `%s`. Statements beyond that (SQLite's FTS5, json_each) are not rewritten: they fail
loudly rather than answer wrongly.
"""

from __future__ import annotations

import re

SOURCE_TABLE = re.compile(
    r"\b(notes|media|chats|characters|prompts)_(items|chunks)\b(?!\w)(\s+(?:AS\s+)?(\w+))?", re.I
)
KEYWORDS = frozenset(
    {
        "where",
        "group",
        "order",
        "join",
        "left",
        "inner",
        "cross",
        "on",
        "limit",
        "union",
        "having",
        "window",
        "offset",
        "using",
        "natural",
    }
)
"""Words after a table name that are the statement going on, not the table's alias."""
JSON_EXTRACT = re.compile(r"json_extract\(\s*([\w.]+)\s*,\s*'\$\.(\w+)'\s*\)", re.I)
USER = "current_setting('knowledge.user_id', true)"
ITEMS = """SELECT id, item_id, origin, source_path, title, content, content_hash, created_at, last_modified,
    version, tags::text AS tags, meta::text AS meta, imported_at FROM pg_items"""
CHUNKS = """SELECT id, item AS item_rowid, chunk_index, chunk_uuid, field, start_offset, end_offset, title,
    body, meta::text AS meta FROM pg_chunks"""


def to_postgres(sql: str) -> str:
    """`sql` (SQLite, on the sources' item and chunk tables) for the PostgreSQL store."""
    sql = sql.replace("%", "%%")
    sql = JSON_EXTRACT.sub(lambda m: f"(({m.group(1)})::jsonb ->> '{m.group(2)}')", sql)
    sql = SOURCE_TABLE.sub(_table, sql)
    return _placeholders(sql)


def _table(match: re.Match[str]) -> str:
    source, kind = match.group(1).lower(), match.group(2).lower()
    select = ITEMS if kind == "items" else CHUNKS
    rows = f"({select} WHERE user_id = {USER} AND source = '{source}')"
    alias = match.group(4)
    if alias is not None and alias.lower() not in KEYWORDS:
        return f"{rows} AS {alias}"
    return f"{rows} AS {source}_{kind}{match.group(3) or ''}"


def _placeholders(sql: str) -> str:
    """`?` outside string literals as `%s`."""
    parts = sql.split("'")
    for n in range(0, len(parts), 2):  # the even parts are outside quotes
        parts[n] = parts[n].replace("?", "%s")
    return "'".join(parts)
