"""The shared stores of one process, built from `database_url` (psycopg is imported only here,
so a server without PostgreSQL never needs it)."""

from __future__ import annotations

from datetime import timedelta

from .keys import PgKeyStore
from .limits import PgBuckets
from .sessions import PgSessionStore
from .state import SharedState

__all__ = ["SharedState", "shared_stores"]


def shared_stores(url: str, ttl: timedelta) -> tuple[SharedState, PgSessionStore, PgKeyStore, PgBuckets]:
    """One pool for the process; sessions, API keys and rate-limit buckets in it."""
    state = SharedState(url)
    return state, PgSessionStore(state, ttl=ttl), PgKeyStore(state), PgBuckets(state)
