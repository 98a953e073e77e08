"""The per-request context: who is asking, from which client, and which databases are theirs.

Built only from the transport's authentication (or the single local user of stdio and
`--no-auth`); nothing in a request's arguments can change it.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING

from loguru import logger

from knowledge_mcp.sources.registry import SOURCES
from knowledge_mcp.sources.storage.db import (
    Database,
    Migration,
    open_database,
    source_failure,
    user_dir,
    validate_user_id,
)
from knowledge_mcp.sources.storage.users import user_of_folder

if TYPE_CHECKING:  # the embedding worker (numpy) is the server's, never loaded by `knowledge-mcp import`
    from knowledge_mcp.sources.search.background import BackgroundIndexer


@dataclass(frozen=True)
class RequestContext:
    user_id: str
    client_id: str | None
    db_paths: Mapping[str, Path]

    @classmethod
    def for_user(cls, data_dir: Path, user_id: str, client_id: str | None = None) -> RequestContext:
        home = user_dir(data_dir, user_id)  # validated and resolved once, not once per source
        paths = {name: home / f"{name}.db" for name in SOURCES}
        return cls(validate_user_id(user_id), client_id, MappingProxyType(paths))


class DatabasePool:
    """Open databases by path, opened (and migrated) once, closed together at shutdown.

    A database whose file was replaced since it was opened (moved aside and re-imported after it
    was damaged) is opened again on its next use: the remedy a broken database's tool error
    gives works without restarting the server. The old connection is closed at shutdown, not
    under a request that may still be reading it.

    With a `background` worker, each use of a source's database is told to it (it embeds what
    lacks vectors, on its own connection); `close` stops it first.
    """

    def __init__(
        self, memory_index_max_chunks: int | None = None, background: BackgroundIndexer | None = None
    ) -> None:
        self._open: dict[Path, tuple[Database, FileIdentity]] = {}
        self._retired: list[Database] = []
        self._lock = asyncio.Lock()
        self._memory_index_max_chunks = memory_index_max_chunks
        self.background = background

    async def get(self, path: Path, source: str) -> Database:
        """The database of `source` at `path`; one that cannot be used is a SourceUnavailableError
        naming the source, the cause and the remedy (and it is not kept: the next call tries again)."""
        migrations = SOURCES[source].migrations
        try:
            db = await self.open(path, migrations)
            db.refuse_if_damaged()  # found damaged by an earlier statement: refused, read or write
        except sqlite3.DatabaseError as exc:
            user = user_of_folder(path.parent.name) or path.parent.name
            failure = source_failure(exc, source, user)
            if failure is None:
                raise
            logger.warning("the {} database of user {} cannot be used: {}", source, user, failure)
            raise failure from exc
        if self.background is not None:
            from knowledge_mcp.sources.search.dense.sqlite.store import SqliteVectorStore

            self.background.notice(SqliteVectorStore(db, SOURCES[source], migrations))
        return db

    async def open(self, path: Path, migrations: Sequence[Migration]) -> Database:
        """The database at `path`, opened and migrated with `migrations` on first use."""
        held = self._open.get(path)
        if held is not None and held[1] == file_identity(path):
            return held[0]
        async with self._lock:
            held = self._open.get(path)
            if held is not None and held[1] == file_identity(path):
                return held[0]
            if held is not None:
                self._retired.append(held[0])
            db = await open_database(path, migrations)
            db.memory_index_max_chunks = self._memory_index_max_chunks
            self._open[path] = (db, file_identity(path))
            return db

    async def settled(self) -> None:
        """Wait for the open databases' background work: the memory copies of small sources and
        the vocabularies of large ones (`sources.memory_index`), started by their first search."""
        for db, _ in list(self._open.values()):
            indexes = db.caches.get("memory_index")
            if indexes is not None:
                await indexes.ready()

    async def close(self) -> None:
        if self.background is not None:
            await self.background.stop()
        for db in [*(db for db, _ in self._open.values()), *self._retired]:
            await db.close()
        self._open.clear()
        self._retired.clear()


FileIdentity = tuple[int, int] | None


def file_identity(path: Path) -> FileIdentity:
    """Which file is at `path` (device, inode), None when there is none: a file moved aside and
    imported anew has a new identity, one written in place keeps its own."""
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return stat.st_dev, stat.st_ino
