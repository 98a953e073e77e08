"""A PostgreSQL database reached through a connection pool (`psycopg` 3 + `psycopg_pool`).

`PgDatabase` is the PostgreSQL counterpart of `storage.db.Database`: `fetchall`, `fetchone`,
`write` and `transaction`, with rows that read by column name (`row["title"]`) as
`aiosqlite.Row` does. Every worker process opens one pool; a statement borrows a connection
for its own duration, so many requests share a few connections.

The URL's password never reaches a message or a log: `redacted(url)` is what is shown.
psycopg is an optional dependency (`knowledge-mcp[postgres]`); importing this module without it
raises a `SourceUnavailableError` that says how to install it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager, suppress
from typing import Any
from urllib.parse import urlsplit, urlunsplit
from weakref import WeakKeyDictionary

from ...errors import InvalidArgumentError, SourceUnavailableError
from .prepared import (
    GENERIC,
    PLAN_SETTINGS,
    PLAN_SQL,
    array_literal,
    is_typed,
    literal_type,
    mode_of,
    name_of,
    numbered,
    sets_plan,
    typed_name,
)

try:
    import psycopg
    from psycopg.abc import Transformer as Binder
    from psycopg.adapt import Transformer
    from psycopg.rows import dict_row
    from psycopg_pool import AsyncConnectionPool
except ImportError as exc:  # pragma: no cover - the dev install always has it
    raise SourceUnavailableError(
        "the PostgreSQL backend needs psycopg: pip install 'knowledge-mcp[postgres]'"
    ) from exc

Row = dict[str, Any]
Statement = tuple[str, Sequence[Any] | dict[str, Any] | None]
"""A statement and its parameters."""
Result = tuple[list[str], list[tuple[Any, ...]]]
"""A statement's column names and rows."""
OPEN_TIMEOUT_S = 10.0
"""How long opening the pool waits for a first connection before it says the server is unreachable."""


def redacted(url: str) -> str:
    """`url` without its password (postgresql://alice:***@host/db), for messages and logs."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return urlunsplit(parts._replace(netloc=netloc))


def check_url(url: str) -> str:
    """A postgresql:// (or postgres://) URL, or InvalidArgumentError naming the setting."""
    if urlsplit(url).scheme not in ("postgresql", "postgres"):
        raise InvalidArgumentError(
            "database_url", "must be a postgresql:// URL such as postgresql://user@host:5432/knowledge"
        )
    return url


class PgDatabase:
    """One pool of connections to a PostgreSQL database; each call borrows a connection."""

    def __init__(self, pool: AsyncConnectionPool[Any], url: str) -> None:
        self.pool = pool
        self.url = url
        self.caches: dict[str, Any] = {}
        """Caches of what is in this database, owned by their users (as `Database.caches`)."""
        self.prepared: WeakKeyDictionary[psycopg.AsyncConnection[Any], set[str]] = WeakKeyDictionary()
        """The statements each connection has prepared (`prepared.py`)."""

    @property
    def name(self) -> str:
        """The URL without its password."""
        return redacted(self.url)

    async def fetchall(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> list[Row]:
        async with self.pool.connection() as conn, conn.cursor(row_factory=dict_row) as cur:
            await cur.execute(sql, params)
            return await cur.fetchall() if cur.description else []

    async def fetchone(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> Row | None:
        rows = await self.fetchall(sql, params)
        return rows[0] if rows else None

    async def write(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> None:
        """One statement as its own transaction."""
        async with self.pool.connection() as conn:
            await conn.execute(sql, params)

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[psycopg.AsyncConnection[Any]]:
        """BEGIN … COMMIT on one borrowed connection, rolled back on any error."""
        async with self.pool.connection() as conn, conn.transaction():
            yield conn

    @asynccontextmanager
    async def connection(self) -> AsyncIterator[psycopg.AsyncConnection[Any]]:
        """One borrowed connection, in autocommit (`send` opens and ends its transactions)."""
        async with self.pool.connection() as conn:
            yield conn

    async def send(self, conn: psycopg.AsyncConnection[Any], statements: Sequence[Statement]) -> list[Result]:
        """Several statements in one round trip: bound here (psycopg's client-side binding, its
        quoting) and sent as one simple query; each one's column names and rows (a command: none).
        Without BEGIN among them they run as one implicit transaction, so a `set_config(…, true)`
        (`schema.as_user`) holds for the statements after it, and ends with them. A statement
        marked `prepared.prepared` runs from this connection's prepared statement."""
        cursor = psycopg.AsyncClientCursor(conn)
        texts, kept = await self._bound(conn, cursor, statements)
        return await _sent(cursor, texts, kept)

    async def _bound(
        self, conn: psycopg.AsyncConnection[Any], cursor: Any, statements: Sequence[Statement]
    ) -> tuple[list[str], set[int]]:
        """Each statement's text with its values, and which texts' results the caller reads (a
        prepared statement's EXECUTE follows the setting of its plan: `prepared.py`)."""
        texts: list[str] = []
        kept: set[int] = set()
        literals: Binder | None = None
        mode: str | None = None  # the plan_cache_mode the statements so far set in this transaction
        for sql, params in statements:
            name = name_of(sql)
            executed = None
            if name is not None:
                literals = literals or Transformer(conn)
                executed = await self._executed(conn, literals, name, sql, params)
            if executed is not None:
                wanted = executed[0]
                texts += ([] if mode == wanted else [PLAN_SQL[wanted]]) + [executed[1]]
                mode = wanted
            else:
                texts.append(cursor.mogrify(sql, params))
                mode = PLAN_SETTINGS.get(sql)
            kept.add(len(texts) - 1)
        return texts, kept

    async def _executed(
        self,
        conn: psycopg.AsyncConnection[Any],
        literals: Binder,
        name: str,
        sql: str,
        params: Sequence[Any] | dict[str, Any] | None,
    ) -> tuple[str, str] | None:
        """The `plan_cache_mode` of marked `sql` and its EXECUTE with `params` (the values bound
        as psycopg binds them: `mogrify`'s literals), prepared now if need be; None: sent as text."""
        text, values = numbered(sql, params)
        bound = [array_literal(v) or literals.as_literal(v).decode() for v in values]
        types = tuple[str, ...]()
        if is_typed(name):
            known = [literal_type(b) for b in bound]
            types = tuple(t for t in known if t is not None)
            typed = typed_name(name, types) if len(types) == len(known) else None
            if typed is None:
                return None
            name = typed
        mode = mode_of(name)
        if not await self._prepare(conn, name, text, types):
            return None
        arguments = f"({', '.join(bound)})" if bound else ""
        return mode, f"EXECUTE {name}{arguments}"

    async def _prepare(
        self, conn: psycopg.AsyncConnection[Any], name: str, text: str, types: tuple[str, ...]
    ) -> bool:
        """Whether `conn` has `text` (numbered placeholders, of `types` when given) prepared as
        `name`: prepared now (its own round trip) if the connection is outside a transaction;
        inside one it is sent unprepared this time."""
        done = self.prepared.setdefault(conn, set())
        if name in done:
            return True
        if conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
            return False
        declared = f"({', '.join(types)})" if types else ""
        with suppress(psycopg.errors.DuplicatePreparedStatement):  # without parameters psycopg
            await conn.execute(f"PREPARE {name}{declared} AS {text}")  # type: ignore[arg-type]  # sends it as it is
        done.add(name)
        return True

    async def close(self) -> None:
        """Close the pool, after each cache with an `aclose` (work in the background that holds a
        connection of its own, e.g. a read ahead) has stopped."""
        for cache in list(self.caches.values()):
            closing = getattr(cache, "aclose", None)
            if closing is not None:
                await closing()
        await self.pool.close()


async def _sent(cursor: Any, texts: Sequence[str], kept: set[int]) -> list[Result]:
    """`texts` (bound statements) sent on `cursor` as one simple query; the column names and rows
    of those at the positions in `kept`."""
    await cursor.execute(";\n".join(texts))
    results: list[Result] = []
    at = 0
    while True:
        if at in kept:
            names = _names(cursor.pgresult)
            results.append((names, list(await cursor.fetchall()) if names else []))
        at += 1
        if not cursor.nextset():
            return results


def _names(result: Any) -> list[str]:
    """A result's column names ([] for a command), read from the result itself: the cursor's
    `description` builds a `Column` object per column on every read, a tenth of a search's client
    time in a page of two dozen columns."""
    if result is None or result.status != psycopg.pq.ExecStatus.TUPLES_OK:
        return []
    return [(result.fname(i) or b"").decode("utf-8", "replace") for i in range(result.nfields)]


async def open_pg(
    url: str, *, min_size: int = 1, max_size: int = 8, timeout_s: float = OPEN_TIMEOUT_S
) -> PgDatabase:
    """Open a pool on `url` and wait for its first connection; an unreachable server or a
    refused login is a `SourceUnavailableError` naming the server (never its password)."""
    check_url(url)
    pool: AsyncConnectionPool[Any] = AsyncConnectionPool(
        url, min_size=min_size, max_size=max_size, open=False, kwargs={"autocommit": True}
    )
    try:
        await pool.open(wait=True, timeout=timeout_s)
    except Exception as exc:
        await pool.close()
        raise SourceUnavailableError(
            f"PostgreSQL at {redacted(url)} cannot be reached ({type(exc).__name__}); "
            "check database_url and that the server is running"
        ) from None
    return PgDatabase(pool, url)


GENERATIONS = "pg_generations"
"""`PgDatabase.caches` key: each (user, source)'s generation as this process last read it (the
statistics every search reads first, `store/stats.index_sizes`), or None for no statistics row."""


def saw_generation(db: PgDatabase, user_id: str, source: str, generation: int | None) -> None:
    """Note `source`'s generation just read (a later search's dense stage compares it)."""
    db.caches.setdefault(GENERATIONS, {})[(user_id, source)] = generation


def seen_generation(db: PgDatabase, user_id: str, source: str) -> tuple[int | None] | None:
    """The generation this process last read of `source` (in a 1-tuple), or None if unknown."""
    seen: dict[tuple[str, str], int | None] = db.caches.get(GENERATIONS, {})
    key = (user_id, source)
    return (seen[key],) if key in seen else None


def forget_generation(db: PgDatabase, user_id: str, source: str) -> None:
    """This process has just moved `source`'s generation (a write): the one noted is old."""
    db.caches.get(GENERATIONS, {}).pop((user_id, source), None)


SET_USER_SQL = "SELECT set_config('knowledge.user_id', %s, true)"
"""`schema.as_user`'s statement: the row policies admit this user's rows until the transaction ends."""
SET_USER_GENERIC_SQL = sets_plan(
    "SELECT set_config('knowledge.user_id', %s, true),"
    " set_config('plan_cache_mode', 'force_generic_plan', true)",
    GENERIC,
)
"""`SET_USER_SQL` and a generic plan for the prepared statement after it (`prepared.py`): one
statement where there were two."""


async def read_as(
    db: PgDatabase, user_id: str, sql: str, params: Sequence[Any] | dict[str, Any] = ()
) -> Result:
    """One statement as `user_id` (row-level security) in one round trip: the user and the
    statement sent together (`PgDatabase.send`: one implicit transaction, the user set for this
    statement alone), where BEGIN, the user, the statement and COMMIT were four, most of a short
    read's client CPU (`docs/performance.md`, "PostgreSQL"). Its column names and rows."""
    return (await reads_as(db, user_id, [(sql, params)]))[0]


async def reads_as(db: PgDatabase, user_id: str, statements: Sequence[Statement]) -> list[Result]:
    """`read_as` of several statements: the user set once before them, all in one round trip.
    The user's statement also sets a generic plan when the first statement is prepared for one.
    Each statement's column names and rows, in order."""
    name = name_of(statements[0][0])
    user = SET_USER_GENERIC_SQL if name is not None and mode_of(name) == GENERIC else SET_USER_SQL
    async with db.connection() as conn:
        results = await db.send(conn, [(user, (user_id,)), *statements])
    return results[1:]


async def read_on(
    conn: psycopg.AsyncConnection[Any], user_id: str, sql: str, params: Sequence[Any] | dict[str, Any]
) -> Result:
    """`read_as` on a connection the caller holds, idle (autocommit), `sql` sent as text: the user
    and the statement in one round trip and one implicit transaction."""
    cursor = psycopg.AsyncClientCursor(conn)
    texts = [cursor.mogrify(SET_USER_SQL, (user_id,)), cursor.mogrify(sql, params)]
    return (await _sent(cursor, texts, {1}))[0]
