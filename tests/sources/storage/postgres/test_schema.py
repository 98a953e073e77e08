"""The store's schema: a user's partitions made on first write, row-level security as a second wall."""

from __future__ import annotations

import asyncio
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest

from knowledge_mcp.sources.errors import InvalidArgumentError
from knowledge_mcp.sources.registry import get_source
from knowledge_mcp.sources.storage.items import ParsedItem
from knowledge_mcp.sources.storage.postgres.pool import PgDatabase, open_pg
from knowledge_mcp.sources.storage.postgres.schema import PARTITIONED, drop_user, ensure_user, partition_name
from knowledge_mcp.sources.storage.postgres.writing import PgItemWriter

pytestmark = pytest.mark.anyio
STAMP = "2026-01-01T00:00:00+00:00"
PARTITIONS_SQL = "SELECT count(*) AS n FROM pg_inherits WHERE inhparent = %s::regclass"


async def write_note(db: PgDatabase, user: str, body: str) -> None:
    writer = PgItemWriter(db, get_source("notes"), user)
    await writer.write_item(Path(f"{user}.md"), ParsedItem("", f"{user}'s note", body, STAMP, STAMP))


async def test_two_workers_writing_a_new_users_first_items_at_once_make_one_set_of_partitions(
    pg_url: str, store: PgDatabase
) -> None:
    other = await open_pg(pg_url)
    try:
        await asyncio.gather(
            ensure_user(store, "new.user@example.org"), ensure_user(other, "new.user@example.org")
        )
        await asyncio.gather(
            write_note(store, "new.user@example.org", "one"), write_note(other, "carol", "two")
        )
    finally:
        await other.close()
    for table in PARTITIONED:
        row = await store.fetchone(PARTITIONS_SQL, (table,))
        assert row == {"n": 2}, table
    found = await store.fetchone("SELECT count(*) AS n FROM pg_items WHERE user_id = 'new.user@example.org'")
    assert found == {"n": 1}


async def test_an_invalid_user_id_never_names_a_partition(store: PgDatabase) -> None:
    with pytest.raises(InvalidArgumentError, match="user"):
        await ensure_user(store, "alice'; DROP TABLE pg_items; --")


async def test_dropping_a_user_removes_their_partitions_and_no_one_elses_rows(store: PgDatabase) -> None:
    await write_note(store, "alice", "alpha")
    await write_note(store, "bob", "beta")
    await drop_user(store, "alice")
    rows = await store.fetchall("SELECT DISTINCT user_id FROM pg_posting_blocks")
    assert rows == [{"user_id": "bob"}]
    assert await store.fetchone("SELECT to_regclass(%s) AS t", (partition_name("pg_items", "alice"),)) == {
        "t": None
    }
    await write_note(store, "alice", "again")  # a dropped user can write again


def as_role(url: str, role: str) -> str:
    parts = urlsplit(url)
    host = parts.netloc.rsplit("@", 1)[-1]
    return urlunsplit(parts._replace(netloc=f"{role}@{host}"))


async def test_a_plain_role_sees_only_the_rows_of_the_user_its_transaction_names(
    pg_url: str, store: PgDatabase
) -> None:
    await write_note(store, "alice", "alpha secret")
    await write_note(store, "bob", "beta secret")
    with psycopg.connect(pg_url, autocommit=True) as admin:
        admin.execute("DROP ROLE IF EXISTS knowledge_app")
        admin.execute("CREATE ROLE knowledge_app LOGIN")
        admin.execute("GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO knowledge_app")
    try:
        with psycopg.connect(as_role(pg_url, "knowledge_app")) as app:
            assert app.execute("SELECT count(*) FROM pg_posting_blocks").fetchone() == (0,)  # no user named
            bobs = partition_name("pg_chunks", "bob")
            assert app.execute(f"SELECT count(*) FROM {bobs}").fetchone() == (0,)  # nor by its partition
            app.execute("SELECT set_config('knowledge.user_id', 'alice', true)")
            titles = app.execute("SELECT title FROM pg_items").fetchall()
            assert titles == [("alice's note",)]
            # even a statement naming another user reads nothing of theirs, nor writes as them
            assert app.execute("SELECT count(*) FROM pg_chunks WHERE user_id = 'bob'").fetchone() == (0,)
            assert app.execute(f"SELECT count(*) FROM {bobs}").fetchone() == (0,)
            alices = partition_name("pg_chunks", "alice")
            assert app.execute(f"SELECT count(*) FROM {alices}").fetchone() == (1,)
            # the postings partitions' own policy: the user named, not a column, opens them
            assert app.execute(
                f"SELECT count(*) FROM {partition_name('pg_posting_blocks', 'bob')}"
            ).fetchone() == (0,)
            alice_postings = partition_name("pg_posting_blocks", "alice")
            assert app.execute(f"SELECT count(*) > 0 FROM {alice_postings}").fetchone() == (True,)
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                app.execute("UPDATE pg_corpus_stats SET user_id = 'bob' WHERE user_id = 'alice'")
    finally:
        with psycopg.connect(pg_url, autocommit=True) as admin:
            admin.execute("REVOKE ALL ON ALL TABLES IN SCHEMA public FROM knowledge_app")
            admin.execute("DROP ROLE knowledge_app")
