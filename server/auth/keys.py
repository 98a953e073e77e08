"""API keys: stored hashed (sha256) in `<data_dir>/keys.db` (or PostgreSQL with `database_url`:
`postgres/keys.py`), each mapped to one user id.

The key itself is shown once, at creation; the database keeps its hash, a short prefix for
display and revocation, the user, when it was made and whether it is revoked.
"""

from __future__ import annotations

import hashlib
import secrets
import sys
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from knowledge_mcp.sources.errors import KnowledgeError
from knowledge_mcp.sources.storage.db import Database, Migration, open_database, validate_user_id

from .scopes import SCOPES, WRITE, scope_text, stored_scopes

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


class KeyStore(Protocol):
    """The API keys of a deployment: `keys.db` in the data folder (`SqliteKeyStore`) or the
    `api_keys` table of PostgreSQL (`postgres/keys.py`); the backend hands out one of them."""

    async def create(self, user_id: str, scopes: Sequence[str] = ()) -> str:
        """A new key for `user_id` (read-only unless `scopes` holds `write`); the only time the
        key itself is available."""
        ...

    async def list(self, user_id: str | None = None) -> list[KeyRecord]: ...

    async def revoke(self, prefix: str) -> bool:
        """Revoke the key with `prefix`; False when there is none."""
        ...

    async def grant_for(self, key: str) -> KeyGrant | None:
        """The user and scopes of a valid, unrevoked key, else None."""
        ...

    async def active_count(self) -> int: ...

    async def close(self) -> None: ...


Opener = Callable[[Path, Sequence[Migration]], Awaitable[Database]]
"""Opens (and migrates) a SQLite database: the server's `DatabasePool.open`, which keeps it."""


class SqliteKeyStore:
    """The API keys of one data directory, in `keys.db`, opened at first use. Reading finds no
    key while the file does not exist (and creates nothing); `create` makes it.

    With `opener` (the server's pool) the database is the pool's, reopened when the file was
    replaced; without, the store opens its own connection and `close` closes it."""

    def __init__(self, data_dir: Path, opener: Opener | None = None) -> None:
        self.path = keys_path(data_dir)
        self._opener = opener
        self._own: Database | None = None

    @classmethod
    async def open(cls, data_dir: Path) -> SqliteKeyStore:
        return cls(data_dir)

    async def _db(self, *, create: bool = False) -> Database | None:
        if not create and not self.path.exists():
            return None
        if self._opener is not None:
            return await self._opener(self.path, MIGRATIONS)
        if self._own is None:
            self._own = await open_database(self.path, MIGRATIONS)
        return self._own

    async def create(self, user_id: str, scopes: Sequence[str] = ()) -> str:
        key, row = new_key(user_id, scopes)
        db = await self._db(create=True)
        assert db is not None
        async with db.transaction() as conn:
            await conn.execute(INSERT_KEY_SQL, row)
        return key

    async def list(self, user_id: str | None = None) -> list[KeyRecord]:
        if user_id is not None:
            user_id = validate_user_id(user_id)
        db = await self._db()
        if db is None:
            return []
        if user_id is None:
            rows = await db.fetchall(LIST_KEYS_SQL)
        else:
            rows = await db.fetchall(LIST_USER_KEYS_SQL, (user_id,))
        return [record_of(r) for r in rows]

    async def revoke(self, prefix: str) -> bool:
        db = await self._db()
        if db is None:
            return False
        async with db.transaction() as conn:
            cursor = await conn.execute(REVOKE_KEY_SQL, (prefix,))
            return cursor.rowcount > 0

    async def grant_for(self, key: str) -> KeyGrant | None:
        db = await self._db()
        row = None if db is None else await db.fetchone(USER_FOR_KEY_SQL, (hash_key(key),))
        return None if row is None else KeyGrant(str(row["user_id"]), tuple(stored_scopes(row["scopes"])))

    async def active_count(self) -> int:
        db = await self._db()
        row = None if db is None else await db.fetchone(COUNT_ACTIVE_SQL)
        return int(row[0]) if row else 0

    async def close(self) -> None:
        if self._own is not None:
            await self._own.close()
            self._own = None


async def run_keys(
    store: KeyStore, action: str, user: str | None, prefix: str | None, scopes: Sequence[str] = ()
) -> int:
    """`knowledge-mcp keys create|list|revoke` on the backend's key store."""
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
    raise AssertionError(action)
