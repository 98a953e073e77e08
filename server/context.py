"""The per-request context: who is asking, from which client, and which databases are theirs.

Built only from the transport's authentication (or the single local user of stdio and
`--no-auth`); nothing in a request's arguments can change it.
"""

from __future__ import annotations

import asyncio
import functools
import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING

from loguru import logger

from knowledge_mcp.sources.registry import SOURCES
from knowledge_mcp.sources.storage.damage.integrity import Stamp, stamp
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
        """The context of `user_id`'s requests from `client_id`: made once per process and
        (data dir, user, client), as `user_dir` is, not joined again on every request."""
        return _context_of(data_dir, user_id, client_id)


@functools.lru_cache(maxsize=4096)
def _context_of(data_dir: Path, user_id: str, client_id: str | None) -> RequestContext:
    home = user_dir(data_dir, user_id)  # validated and resolved once, not once per source
    paths = {name: home / f"{name}.db" for name in SOURCES}
    return RequestContext(validate_user_id(user_id), client_id, MappingProxyType(paths))


Held = tuple[Database, Stamp | None]
"""An open database and its file as last seen (`integrity.stamp`)."""


class DatabasePool:
    """Open databases by path, opened (and migrated) once, closed together at shutdown.

    A database whose file was replaced since it was opened (moved aside and re-imported after it
    was damaged) is opened again on its next use: the remedy a broken database's tool error
    gives works without restarting the server. The old connection is closed at shutdown, not
    under a request that may still be reading it. One changed in place behind the connection
    (its size or time moved) has its cached pages dropped, so what is read is the file as it
    is now: damage written into it is reported, not hidden by the cache.

    With a `background` worker, each use of a source's database is told to it (it embeds what
    lacks vectors, on its own connection); `close` stops it first.
    """

    def __init__(
        self, memory_index_max_chunks: int | None = None, background: BackgroundIndexer | None = None
    ) -> None:
        self._open: dict[Path, Held] = {}
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
        now = stamp(path)
        if held is not None and same_file(held[1], now):
            return await self._as_it_is_now(path, held, now)
        async with self._lock:
            held = self._open.get(path)
            now = stamp(path)
            if held is not None and same_file(held[1], now):
                return await self._as_it_is_now(path, held, now)
            if held is not None:
                self._retired.append(held[0])
            db = await open_database(path, migrations)
            db.memory_index_max_chunks = self._memory_index_max_chunks
            self._open[path] = (db, stamp(path))
            return db

    async def _as_it_is_now(self, path: Path, held: Held, now: Stamp | None) -> Database:
        db, then = held
        if then != now:  # written since (a checkpoint, another process, damage): read it afresh
            self._open[path] = (db, now)
            await db.drop_cached_pages()
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


def same_file(then: Stamp | None, now: Stamp | None) -> bool:
    """Whether `now` is the file `then` was (device, inode), whatever was written into it: a file
    moved aside and imported anew is another file, one written in place is the same."""
    return then == now or (then is not None and now is not None and then[:2] == now[:2])
