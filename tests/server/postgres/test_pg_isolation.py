"""Row-level security as the second line of defence of the PostgreSQL item store.

Every statement of `PgStore` binds the caller's user id, and its transaction names the user
for the row policies (`as_user`). Here the two are made to disagree on purpose: alice's
`PgStore` runs statements that bind bob, read his partitions by name, or count whole tables;
the policies still give nothing of bob's. The store is written and read by an ordinary login
role, as a deployment should run it (the test server's admin is a superuser, which bypasses
row-level security), and a real server logged in as that role serves alice nothing of bob's.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import psycopg
import pytest
from mcp import Client

from knowledge_mcp.server.app import build_server
from knowledge_mcp.server.config import Settings
from knowledge_mcp.sources.storage.postgres.pool import PgDatabase, open_pg
from knowledge_mcp.sources.storage.postgres.schema import partition_name
from knowledge_mcp.sources.storage.postgres.store import PgStore
from knowledge_mcp.sources.storage.postgres.store.rows import CHUNKS_OF_ITEM_SQL, HITS_SQL, ITEM_BY_ID_SQL
from tests.conftest import call, import_into_store, store_settings
from tests.pgvector_probe import pgvector_in_use
from tests.server.isolation_world import MARKERS, SOURCES, write_user_files
from tests.server.shared.test_row_security import app_url  # noqa: F401  (the fixture)

pytestmark = pytest.mark.anyio

TABLES = ("pg_items", "pg_chunks", "pg_posting_blocks", "pg_term_docs", "pg_files", "pg_corpus_stats")


@pytest.fixture
async def store(app_url: str, pg_url: str, tmp_path: Path) -> AsyncIterator[PgDatabase]:  # noqa: F811
    """alice's and bob's items of every source, imported by the ordinary role (pgvector made by
    the admin first: only a superuser may create it, and the migration would try)."""
    if pgvector_in_use():  # else the run leaves it out (tests/pgvector_probe.py): real[] vectors
        with psycopg.connect(pg_url, autocommit=True) as admin:
            admin.execute("CREATE EXTENSION IF NOT EXISTS vector")
    for user in ("alice", "bob"):
        for source, folder in write_user_files(tmp_path / "files", user).items():
            imported = await import_into_store(
                "postgresql", app_url, tmp_path / "data", source, folder, user=user
            )
            assert imported.added >= 1
    pg = await open_pg(app_url)
    try:
        yield pg
    finally:
        await pg.close()


def items(pg: PgDatabase, user: str, source: str) -> PgStore:
    return PgStore(pg, user, source, Path("/nonexistent"))


@pytest.mark.parametrize("source", SOURCES)
async def test_alices_items_running_statements_that_name_bob_read_nothing_of_his(
    store: PgDatabase, source: str
) -> None:
    bobs = items(store, "bob", source)
    bob_row = (await bobs.items())[0]  # the control
    bob_rowid, bob_id = int(bob_row["id"]), str(bob_row["item_id"])
    bob_chunks = [int(r["id"]) for r in await bobs.chunks_of(bob_rowid)]
    assert bob_chunks and await bobs.item(bob_id) is not None

    alices = items(store, "alice", source)  # the transaction's user: alice
    assert await alices._run(ITEM_BY_ID_SQL, ("bob", source, bob_id)) == []
    hits = ([bob_rowid] * len(bob_chunks), bob_chunks, "bob", source, "bob", source)
    assert await alices._run(HITS_SQL, hits) == []
    assert await alices._run(CHUNKS_OF_ITEM_SQL, ("bob", source, bob_rowid)) == []
    for table in TABLES:
        rows = await alices._run(f"SELECT DISTINCT user_id FROM {table}", ())  # no WHERE at all
        assert {r["user_id"] for r in rows} <= {"alice"}, table
        mine = await alices._run(f"SELECT count(*) AS n FROM {table} WHERE user_id = %s", ("alice",))
        assert int(mine[0]["n"]) > 0, table  # the control: alice's rows are there
        if table != "pg_corpus_stats":  # not partitioned
            theirs = await alices._run(f"SELECT count(*) AS n FROM {partition_name(table, 'bob')}", ())
            assert int(theirs[0]["n"]) == 0, table
    # the same through the store's named reads of the whole source
    seen = await alices.titles()
    assert [r["item_id"] for r in await alices.items()] == [r["item_id"] for r in seen]
    assert [r["item_id"] for r in await alices.recent(10)] == [r["item_id"] for r in seen]
    assert [r["item_id"] for r in seen] != [bob_id] and len(seen) == 1
    assert MARKERS["bob"][source] not in str(seen).lower()


async def test_a_server_logged_in_as_an_ordinary_role_serves_alice_nothing_of_bobs(
    store: PgDatabase,
    app_url: str,  # noqa: F811
    tmp_path: Path,
) -> None:
    settings = Settings(data_dir=tmp_path / "data", user="alice", **store_settings("postgresql", app_url))
    mcp, host = build_server(settings)
    try:
        async with Client(mcp) as alice:
            for source in SOURCES:
                mine = await call(alice, f"{source}_search", query=MARKERS["alice"][source])
                assert mine["count"] >= 1, source
                theirs = await call(alice, f"{source}_search", query=MARKERS["bob"][source])
                assert theirs["count"] == 0, source
            everyone = " OR ".join(MARKERS["bob"].values())
            assert (await call(alice, "knowledge_search", query=everyone))["results"] == []
    finally:
        await host.close()
