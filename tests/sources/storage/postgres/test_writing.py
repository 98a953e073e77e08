"""The PostgreSQL writer: the SQLite import run, and bm25 statistics kept current with every write."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from knowledge_mcp.sources.registry import get_source
from knowledge_mcp.sources.storage.db import database_path, open_database
from knowledge_mcp.sources.storage.importing import Importer
from knowledge_mcp.sources.storage.postgres.pool import PgDatabase
from knowledge_mcp.sources.storage.postgres.writing import PgItemWriter

pytestmark = pytest.mark.anyio
FIXTURES = Path(__file__).parents[4] / "fixtures"

RECOUNT_SQL = """SELECT lexeme, count(*) AS docs
    FROM pg_posting_blocks b CROSS JOIN LATERAL unnest(b.chunks) AS c(chunk)
    WHERE user_id = %s AND source = %s GROUP BY lexeme ORDER BY lexeme"""
STORED_SQL = """SELECT lexeme, docs FROM pg_term_docs WHERE user_id = %s AND source = %s ORDER BY lexeme"""
SIZES_SQL = """SELECT count(*) AS chunks, coalesce(sum(tokens), 0) AS tokens FROM pg_chunks
    WHERE user_id = %s AND source = %s"""
STATS_SQL = "SELECT chunks, tokens FROM pg_corpus_stats WHERE user_id = %s AND source = %s"


async def assert_statistics_current(db: PgDatabase, user: str, source: str) -> dict[str, int]:
    """The stored document counts and sizes equal a recount of the postings and chunks."""
    recount = await db.fetchall(RECOUNT_SQL, (user, source))
    stored = await db.fetchall(STORED_SQL, (user, source))
    assert [(r["lexeme"], r["docs"]) for r in stored] == [(r["lexeme"], r["docs"]) for r in recount]
    sizes = await db.fetchone(SIZES_SQL, (user, source))
    stats = await db.fetchone(STATS_SQL, (user, source))
    assert stats is not None and sizes is not None
    assert (stats["chunks"], stats["tokens"]) == (sizes["chunks"], sizes["tokens"])
    return {r["lexeme"]: r["docs"] for r in stored}


@pytest.mark.parametrize("source", ["notes", "media", "chats"])
async def test_an_import_reports_and_counts_terms_exactly_as_the_sqlite_import(
    store: PgDatabase, tmp_path: Path, source: str
) -> None:
    parser = get_source(source)
    lite = await open_database(database_path(tmp_path, "local", source), parser.migrations)
    try:
        expected = await Importer(parser, lite).run([FIXTURES / source])
        await lite.write(
            f"CREATE VIRTUAL TABLE temp.terms USING fts5vocab(main, '{source}_chunks_fts', 'row')"
        )
        fts5_rows = {row[0]: row[1] for row in await lite.fetchall("SELECT term, doc FROM temp.terms")}
    except Exception:
        await lite.close()
        raise
    await lite.close()
    summary = await PgItemWriter(store, parser, "local").run([FIXTURES / source])
    for field in ("added", "updated", "unchanged", "skipped", "files_seen", "files_failed"):
        assert getattr(summary, field) == getattr(expected, field), field
    docs = await assert_statistics_current(store, "local", source)
    assert docs == fts5_rows


async def test_replacing_and_pruning_files_take_their_old_postings_out_of_the_statistics(
    store: PgDatabase, tmp_path: Path
) -> None:
    folder = tmp_path / "notes"
    shutil.copytree(FIXTURES / "notes" / "recipes", folder)
    writer = PgItemWriter(store, get_source("notes"), "local")
    first = await writer.run([folder])
    assert first.added == 6
    before = await assert_statistics_current(store, "local", "notes")
    assert "patata" in before and "levain" in before and before["banneton"] == 2
    (folder / "sourdough-country-loaf.md").write_text("# Focaccia\n\nOlive oil, rosemary, flaky salt.\n")
    (folder / "tortilla-espanola.md").unlink()
    again = await writer.run([folder], prune=True)
    assert (again.updated, again.pruned, again.unchanged) == (1, 1, 4)
    after = await assert_statistics_current(store, "local", "notes")
    assert "patata" not in after and "levain" not in after  # only in the gone and the replaced note
    assert after["banneton"] == 1
    assert after["focaccia"] == 1


async def test_an_unchanged_import_writes_nothing(store: PgDatabase) -> None:
    writer = PgItemWriter(store, get_source("prompts"), "local")
    await writer.run([FIXTURES / "prompts"])
    stats = await store.fetchone(STATS_SQL, ("local", "prompts"))
    again = await writer.run([FIXTURES / "prompts"])
    assert (again.added, again.updated, again.unchanged) == (0, 0, 5)
    assert await store.fetchone(STATS_SQL, ("local", "prompts")) == stats


async def test_without_bm25_only_items_and_chunks_are_written(store: PgDatabase) -> None:
    writer = PgItemWriter(store, get_source("prompts"), "local", bm25=False)
    summary = await writer.run([FIXTURES / "prompts"])
    assert summary.added == 5
    chunks = await store.fetchone("SELECT count(*) AS n FROM pg_chunks")
    postings = await store.fetchone("SELECT count(*) AS n FROM pg_posting_blocks")
    assert chunks is not None and chunks["n"] > 0
    assert postings == {"n": 0}
