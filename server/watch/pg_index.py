"""The watcher's `Index` on the PostgreSQL item store (`item_store = "postgresql"`).

Changed files go through the same import runner into `PgItemWriter`; this reads the files'
records (`pg_files`) and the items' versions as the user (`PgStore`: row-level security and the
user id bound in every statement), and forgets a file that is gone through the writer's own
`prune_file` (its items, chunks, postings and their share of the bm25 statistics at once).
Paths compare byte-wise (`COLLATE "C"`), as SQLite's do, so "under a folder" means the same.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from knowledge_mcp.sources.storage.runs import FileRecord, ItemStore

from .reindex import PER_QUERY, under

UNDER = '(source_path = %s OR (source_path COLLATE "C" > %s AND source_path COLLATE "C" < %s))'
ITEMS_SQL = "SELECT item_id, version FROM pg_items WHERE user_id = %s AND source = %s AND ("
KNOWN_SQL = """SELECT path, file_hash, item_count, size, mtime_ns FROM pg_files
    WHERE user_id = %s AND source = %s AND path = ANY(%s::text[])"""
FILES_UNDER_SQL = """SELECT path FROM pg_files WHERE user_id = %s AND source = %s
    AND (path = %s OR (path COLLATE "C" > %s AND path COLLATE "C" < %s))"""


class PgIndex:
    """`items` (a `PgStore`: one user's source) changed through `importer` (their `PgItemWriter`)."""

    def __init__(self, importer: ItemStore, items: Any) -> None:
        self.importer = importer
        self.items = items

    async def known(self, keys: Sequence[str]) -> dict[str, FileRecord]:
        return {row["path"]: row for row in await self.items.rows(KNOWN_SQL, (list(keys),))}

    async def versions(self, keys: Sequence[str]) -> dict[str, int]:
        found: dict[str, int] = {}
        for at in range(0, len(keys), PER_QUERY):
            part = keys[at : at + PER_QUERY]
            sql = ITEMS_SQL + " OR ".join([UNDER] * len(part)) + ")"
            values = [value for path in part for value in under(path)]
            found.update({row["item_id"]: int(row["version"]) for row in await self.items.rows(sql, values)})
        return found

    async def forget(self, gone: Sequence[str]) -> int:
        removed = 0
        for path in gone:
            files = [row["path"] for row in await self.items.rows(FILES_UNDER_SQL, under(path))] or [path]
            for file in files:
                removed += await self.importer.prune_file(file)
        return removed
