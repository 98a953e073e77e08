"""Row-level security behind the user filter: a role bound by the policies sees only the rows of
the user its transaction names (tests/postgres.py runs the server; its admin bypasses RLS, so
the test makes an ordinary role, as a deployment should run the server)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest

from knowledge_mcp.server.postgres.schema import SESSIONS
from knowledge_mcp.server.postgres.sessions import PgSessionStore
from knowledge_mcp.server.postgres.state import SharedState
from knowledge_mcp.sources.storage.postgres.migrations import migrate
from knowledge_mcp.sources.storage.postgres.pool import open_pg

pytestmark = pytest.mark.anyio


def as_role(url: str, role: str) -> str:
    parts = urlsplit(url)
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit(parts._replace(netloc=f"{role}@{host}"))


@pytest.fixture
def app_url(pg_url: str) -> Iterator[str]:
    """`pg_url` as a fresh login role that is neither superuser nor BYPASSRLS."""
    role = f"app_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {role} LOGIN NOSUPERUSER NOBYPASSRLS")  # type: ignore[arg-type]
        conn.execute(f"GRANT ALL ON SCHEMA public TO {role}")  # type: ignore[arg-type]
    yield as_role(pg_url, role)
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(f"DROP OWNED BY {role}")  # type: ignore[arg-type]
        conn.execute(f"DROP ROLE {role}")  # type: ignore[arg-type]


async def test_the_row_policies_admit_only_the_named_users_rows(app_url: str) -> None:
    state = SharedState(app_url, pool_size=2)
    try:
        store = PgSessionStore(state)  # the role owns the tables it migrates (FORCE binds it)
        await (await store.open("alice", "same-id")).cite(["notes://alices"])
        await (await store.open("bob", "same-id")).cite(["notes://bobs"])
        assert list((await store.open("alice", "same-id")).cited) == ["notes://alices"]
        db = await state.db()
        assert await db.fetchall("SELECT user_id FROM knowledge_sessions") == []  # no user named
        async with state.as_user("alice") as cursor:
            await cursor.execute("SELECT user_id, cited FROM knowledge_sessions")  # no WHERE at all
            assert await cursor.fetchall() == [{"user_id": "alice", "cited": ["notes://alices"]}]
        with pytest.raises(psycopg.errors.InsufficientPrivilege):  # new row violates the policy
            async with state.as_user("alice") as cursor:
                sql = (
                    "INSERT INTO knowledge_sessions (user_id, session_id, expires_at) VALUES (%s, 'x', now())"
                )
                await cursor.execute(sql, ("bob",))
        async with state.as_user("alice") as cursor:
            await cursor.execute("DELETE FROM knowledge_sessions")
        assert list((await store.open("bob", "same-id")).cited) == ["notes://bobs"]
    finally:
        await state.close()


async def test_a_version_one_session_keeps_its_seen_list_through_the_migration(app_url: str) -> None:
    db = await open_pg(app_url, max_size=1)
    try:
        await migrate(db, "sessions", SESSIONS[:1])  # as the role the policies bind
        async with db.pool.connection() as conn, conn.transaction():
            await conn.execute("SELECT set_config('knowledge.user_id', 'alice', true)")
            await conn.execute(
                "INSERT INTO knowledge_sessions (user_id, session_id, seen, expires_at)"
                " VALUES ('alice', 'old', ARRAY['notes://1', 'notes://2'], now() + interval '1 hour')"
            )
    finally:
        await db.close()
    state = SharedState(app_url, pool_size=2)
    try:
        session = await PgSessionStore(state).open("alice", "old")
        assert list(session.seen) == ["notes://1", "notes://2"]
        await session.record_results("q", ["notes://1"])
        assert list((await PgSessionStore(state).open("alice", "old")).seen) == ["notes://2", "notes://1"]
    finally:
        await state.close()
