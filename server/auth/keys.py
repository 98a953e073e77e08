"""API keys: stored hashed (sha256) in `<data_dir>/keys.db` (or PostgreSQL with `database_url`:
`shared/keys.py`), each mapped to one user id.

The key itself is shown once, at creation; the database keeps its hash, a short prefix for
display and revocation, the user, when it was made and whether it is revoked.
"""

from __future__ import annotations

import hashlib
import secrets
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from knowledge_mcp.sources.errors import KnowledgeError
from knowledge_mcp.sources.storage.db import Database, Migration, open_database, validate_user_id

from .scopes import SCOPES, WRITE, scope_text, stored_scopes

if TYPE_CHECKING:
    from ..shared.keys import PgKeyStore

KEY_PREFIX = "km_"
PREFIX_LENGTH = len(KEY_PREFIX) + 8

MIGRATIONS = (
    Migration(
        1,
        "api keys, hashed",
        """
        CREATE TABLE api_keys (
            id INTEGER PRIMARY KEY,
            key_hash TEXT NOT NULL UNIQUE,
            prefix TEXT NOT NULL UNIQUE,
            user_id TEXT NOT NULL,
            created_at TEXT NOT NULL,
            revoked INTEGER NOT NULL DEFAULT 0
        );
        """,
    ),
    # Keys made before scopes existed keep '' (read-only): writing needs a new key made with
    # `keys create --scope write`.
    Migration(2, "scopes of api keys", "ALTER TABLE api_keys ADD COLUMN scopes TEXT NOT NULL DEFAULT '';"),
)

INSERT_KEY_SQL = "INSERT INTO api_keys (key_hash, prefix, user_id, created_at, scopes) VALUES (?, ?, ?, ?, ?)"
LIST_KEYS_SQL = "SELECT prefix, user_id, created_at, revoked, scopes FROM api_keys ORDER BY id"
LIST_USER_KEYS_SQL = (  # user ids are case-sensitive: `Bob`'s keys are not `bob`'s
    "SELECT prefix, user_id, created_at, revoked, scopes FROM api_keys WHERE user_id = ? ORDER BY id"
)
REVOKE_KEY_SQL = "UPDATE api_keys SET revoked = 1 WHERE prefix = ?"
USER_FOR_KEY_SQL = "SELECT user_id, scopes FROM api_keys WHERE key_hash = ? AND revoked = 0"
COUNT_ACTIVE_SQL = "SELECT count(*) FROM api_keys WHERE revoked = 0"


class ApiKeyError(KnowledgeError):
    pass


def keys_path(data_dir: Path) -> Path:
    return data_dir / "keys.db"


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def looks_like_key(token: str) -> bool:
    return token.startswith(KEY_PREFIX)


@dataclass(frozen=True)
class KeyRecord:
    prefix: str
    user_id: str
    created_at: str
    revoked: bool
    scopes: tuple[str, ...] = ()


@dataclass(frozen=True)
class KeyGrant:
    """What a valid key grants: its user and scopes."""

    user_id: str
    scopes: tuple[str, ...]


def new_key(user_id: str, scopes: Sequence[str]) -> tuple[str, tuple[str, str, str, str, str]]:
    """A new key and its stored row (hash, prefix, user, created, scopes); the user id as given."""
    user_id = validate_user_id(user_id)
    unknown = [s for s in scopes if s not in SCOPES]
    if unknown:
        raise ApiKeyError(f"keys create: unknown scope {unknown[0]!r} (allowed: {', '.join(SCOPES)})")
    key = KEY_PREFIX + secrets.token_urlsafe(32)
    created = datetime.now(UTC).isoformat(timespec="seconds")
    return key, (hash_key(key), key[:PREFIX_LENGTH], user_id, created, scope_text(scopes))


def record_of(row: Any) -> KeyRecord:
    scopes = tuple(stored_scopes(row["scopes"]))
    return KeyRecord(row["prefix"], row["user_id"], row["created_at"], bool(row["revoked"]), scopes)


class KeyStore:
    """The API keys of one data directory."""

    def __init__(self, db: Database) -> None:
        self.db = db

    @classmethod
    async def open(cls, data_dir: Path) -> KeyStore:
        return cls(await open_database(keys_path(data_dir), MIGRATIONS))

    async def create(self, user_id: str, scopes: Sequence[str] = ()) -> str:
        """A new key for `user_id` (read-only unless `scopes` holds `write`); the only time the
        key itself is available."""
        key, row = new_key(user_id, scopes)
        async with self.db.transaction() as conn:
            await conn.execute(INSERT_KEY_SQL, row)
        return key

    async def list(self, user_id: str | None = None) -> list[KeyRecord]:
        if user_id is None:
            rows = await self.db.fetchall(LIST_KEYS_SQL)
        else:
            rows = await self.db.fetchall(LIST_USER_KEYS_SQL, (validate_user_id(user_id),))
        return [record_of(r) for r in rows]

    async def revoke(self, prefix: str) -> bool:
        async with self.db.transaction() as conn:
            cursor = await conn.execute(REVOKE_KEY_SQL, (prefix,))
            return cursor.rowcount > 0

    async def user_for(self, key: str) -> str | None:
        """The user a valid, unrevoked key belongs to, else None."""
        grant = await self.grant_for(key)
        return None if grant is None else grant.user_id

    async def grant_for(self, key: str) -> KeyGrant | None:
        """The user and scopes of a valid, unrevoked key, else None."""
        row = await self.db.fetchone(USER_FOR_KEY_SQL, (hash_key(key),))
        return None if row is None else KeyGrant(str(row["user_id"]), tuple(stored_scopes(row["scopes"])))

    async def active_count(self) -> int:
        row = await self.db.fetchone(COUNT_ACTIVE_SQL)
        return int(row[0]) if row else 0

    async def close(self) -> None:
        await self.db.close()


async def open_keys(data_dir: Path, database_url: str | None = None) -> KeyStore | PgKeyStore:
    """The key store: PostgreSQL's when `database_url` is set, else `<data_dir>/keys.db`."""
    if database_url is None:
        return await KeyStore.open(data_dir)
    from ..shared.keys import PgKeyStore
    from ..shared.state import SharedState

    return PgKeyStore(SharedState(database_url, pool_size=1))


async def has_active_keys(data_dir: Path, database_url: str | None = None) -> bool:
    """Whether any unrevoked key exists (without creating keys.db when there is none)."""
    if database_url is None and not keys_path(data_dir).exists():
        return False
    store = await open_keys(data_dir, database_url)
    try:
        return await store.active_count() > 0
    finally:
        await store.close()


async def run_keys(
    data_dir: Path,
    action: str,
    user: str | None,
    prefix: str | None,
    scopes: Sequence[str] = (),
    database_url: str | None = None,
) -> int:
    """`knowledge-mcp keys create|list|revoke` (in PostgreSQL with `database_url`)."""
    store = await open_keys(data_dir, database_url)
    try:
        if action == "create":
            if user is None:
                raise ApiKeyError("keys create: --user is required")
            key = await store.create(user, scopes)
            print(key)
            kind = "read-write" if WRITE in scopes else "read-only"
            print(f"{kind} API key for {validate_user_id(user)} (shown once; store it now)", file=sys.stderr)
            return 0
        if action == "list":
            for record in await store.list(user):
                state = "revoked" if record.revoked else "active"
                scope = scope_text(record.scopes) or "read"
                print(f"{record.prefix}\t{record.user_id}\t{record.created_at}\t{state}\t{scope}")
            return 0
        if action == "revoke":
            assert prefix is not None
            if not await store.revoke(prefix):
                raise ApiKeyError(f"keys revoke: no key with prefix {prefix}")
            print(f"revoked {prefix}", file=sys.stderr)
            return 0
    finally:
        await store.close()
    raise AssertionError(action)
