"""API keys in PostgreSQL: the `auth/keys.KeyStore` protocol on the shared `api_keys` table, so a key
made with `keys create --database-url …` works on every worker and host at once.

A key is found by its hash before anyone is authenticated: that lookup (and revoking by prefix,
an administrator's CLI verb) is cross-user by nature; listing filters by user when asked.
"""

from __future__ import annotations

from collections.abc import Sequence

import psycopg
from loguru import logger

from knowledge_mcp.sources.errors import SourceUnavailableError
from knowledge_mcp.sources.storage.db import validate_user_id

from ..auth.keys import KeyGrant, KeyRecord, hash_key, new_key, record_of
from ..auth.scopes import stored_scopes
from .state import SharedState

INSERT_KEY_SQL = (
    "INSERT INTO api_keys (key_hash, prefix, user_id, created_at, scopes) VALUES (%s, %s, %s, %s, %s)"
)
LIST_KEYS_SQL = "SELECT prefix, user_id, created_at, revoked, scopes FROM api_keys ORDER BY id"
LIST_USER_KEYS_SQL = (
    "SELECT prefix, user_id, created_at, revoked, scopes FROM api_keys WHERE user_id = %s ORDER BY id"
)
REVOKE_KEY_SQL = "UPDATE api_keys SET revoked = true WHERE prefix = %s RETURNING id"
GRANT_SQL = "SELECT user_id, scopes FROM api_keys WHERE key_hash = %s AND NOT revoked"
COUNT_ACTIVE_SQL = "SELECT count(*) AS active FROM api_keys WHERE NOT revoked"


class PgKeyStore:
    """The API keys of the shared database."""

    def __init__(self, state: SharedState) -> None:
        self.state = state

    async def create(self, user_id: str, scopes: Sequence[str] = ()) -> str:
        key, row = new_key(user_id, scopes)
        await (await self.state.db()).write(INSERT_KEY_SQL, row)
        return key

    async def list(self, user_id: str | None = None) -> list[KeyRecord]:
        db = await self.state.db()
        if user_id is None:
            rows = await db.fetchall(LIST_KEYS_SQL)
        else:
            rows = await db.fetchall(LIST_USER_KEYS_SQL, (validate_user_id(user_id),))
        return [record_of(r) for r in rows]

    async def revoke(self, prefix: str) -> bool:
        return await (await self.state.db()).fetchone(REVOKE_KEY_SQL, (prefix,)) is not None

    async def grant_for(self, key: str) -> KeyGrant | None:
        """The key's user and scopes; None for an unknown or revoked key, and while PostgreSQL
        cannot be reached (the request is refused as unauthenticated; a WARNING says why)."""
        try:
            row = await (await self.state.db()).fetchone(GRANT_SQL, (hash_key(key),))
        except (psycopg.Error, OSError, SourceUnavailableError) as exc:
            logger.warning("api keys: PostgreSQL unavailable ({}); key not verified", type(exc).__name__)
            return None
        return None if row is None else KeyGrant(str(row["user_id"]), tuple(stored_scopes(row["scopes"])))

    async def active_count(self) -> int:
        row = await (await self.state.db()).fetchone(COUNT_ACTIVE_SQL)
        return int(row["active"]) if row else 0

    async def close(self) -> None:
        await self.state.close()
