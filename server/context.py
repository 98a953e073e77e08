"""The per-request context: who is asking, from which client, and which databases are theirs.

Built only from the transport's authentication (or the single local user of stdio and
`--no-auth`); nothing in a request's arguments can change it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

from sources.db import Database, database_path, open_database
from sources.registry import SOURCES


@dataclass(frozen=True)
class RequestContext:
    user_id: str
    client_id: str | None
    db_paths: Mapping[str, Path]

    @classmethod
    def for_user(cls, data_dir: Path, user_id: str, client_id: str | None = None) -> RequestContext:
        paths = {name: database_path(data_dir, user_id, name) for name in SOURCES}
        return cls(user_id, client_id, MappingProxyType(paths))


class DatabasePool:
    """Open databases by path, opened (and migrated) once, closed together at shutdown."""

    def __init__(self) -> None:
        self._open: dict[Path, Database] = {}
        self._lock = asyncio.Lock()

    async def get(self, path: Path, source: str) -> Database:
        db = self._open.get(path)
        if db is not None:
            return db
        async with self._lock:
            if path not in self._open:
                self._open[path] = await open_database(path, SOURCES[source].migrations)
            return self._open[path]

    async def close(self) -> None:
        for db in self._open.values():
            await db.close()
        self._open.clear()
