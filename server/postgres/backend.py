"""The PostgreSQL backend (`database_url`): sessions, their timelines, API keys and rate-limit
buckets in PostgreSQL, shared by every worker and host; the items where `item_store` says.

psycopg is imported only from here (and the modules beside it), so a server without
PostgreSQL never needs it: `backend.open_backend` imports this module only with `database_url`.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from ..auth.keys import KeyStore
from ..auth.limits import SharedBuckets
from ..backend.protocols import Items, Sessions
from ..config import Settings
from ..context import DatabasePool
from .items import PostgresItems
from .keys import PgKeyStore
from .limits import PgBuckets
from .sessions import PgSessionStore
from .state import POOL_SIZE, SharedState

__all__ = ["PostgresBackend", "postgres_items"]


class PostgresBackend:
    """One pool on `url` for the process's sessions, keys and buckets; `items` as chosen."""

    stateless = True
    """Every worker reads a session from PostgreSQL: any worker answers any request."""

    def __init__(
        self,
        url: str,
        pool: DatabasePool,
        items: Items,
        *,
        session_ttl: timedelta,
        connections: int | None = None,
    ) -> None:
        self.pool = pool
        self.items = items
        self.state = SharedState(url, pool_size=connections or POOL_SIZE)
        self.sessions: Sessions = PgSessionStore(self.state, ttl=session_ttl)
        self.keys: KeyStore = PgKeyStore(self.state)
        self.buckets: SharedBuckets | None = PgBuckets(self.state)

    def start_background(self) -> None:
        if self.pool.background is not None:
            self.pool.background.start()

    async def close(self) -> None:
        await self.pool.close()
        await self.items.close()
        await self.state.close()


def postgres_items(url: str, data_dir: Path, pool: DatabasePool, settings: Settings | None = None) -> Items:
    """The PostgreSQL item store, telling the pool's embedding worker what it serves; small
    sources ranked from copies in memory as `settings` bound them."""
    memory = None if settings is None else (settings.memory_index_max_chunks, settings.memory_index_total_mb)
    return PostgresItems(url, data_dir, pool.background, memory)
