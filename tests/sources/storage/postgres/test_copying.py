"""migrate --to: a user's SQLite sources copied into PostgreSQL, verified, resumable."""

from __future__ import annotations

from pathlib import Path

import pytest

from knowledge_mcp.server.cli.dispatch import main
from knowledge_mcp.sources.registry import get_source
from knowledge_mcp.sources.storage.db import database_path, open_database
from knowledge_mcp.sources.storage.importing import Importer
from knowledge_mcp.sources.storage.postgres.copying import copy_source
from knowledge_mcp.sources.storage.postgres.pool import PgDatabase
from knowledge_mcp.sources.storage.postgres.writing import PgItemWriter

pytestmark = pytest.mark.anyio
FIXTURES = Path(__file__).parents[4] / "fixtures"


@pytest.mark.parametrize("name", ["notes", "prompts", "media"])
async def test_a_copy_verifies_and_a_later_import_into_postgresql_finds_it_all_unchanged(
    store: PgDatabase, tmp_path: Path, name: str
) -> None:
    source = get_source(name)
    lite = await open_database(database_path(tmp_path, "local", name), source.migrations)
    try:
        imported = await Importer(source, lite).run([FIXTURES / name])
        report = await copy_source(lite, store, source, "local")
    finally:
        await lite.close()
    assert report.outcomes == {"added": imported.added}
    assert report.sqlite == report.postgres and report.postgres[0] == imported.added
    assert report.searches >= 5 and report.same_top10 == report.searches
    again = await PgItemWriter(store, source, "local").run([FIXTURES / name])
    assert (again.added, again.updated, again.unchanged) == (0, 0, imported.added)


async def test_a_copy_cut_short_is_finished_by_the_next_run(store: PgDatabase, tmp_path: Path) -> None:
    source = get_source("notes")
    lite = await open_database(database_path(tmp_path, "local", "notes"), source.migrations)
    try:
        await Importer(source, lite).run([FIXTURES / "notes" / "recipes"])
        await copy_source(lite, store, source, "local")
        # as if the copy had stopped before these two
        gone = [
            str((FIXTURES / "notes" / "recipes" / f).resolve())
            for f in ("ramen-notes.md", "weeknight-dal.md")
        ]
        writer = PgItemWriter(store, source, "local")
        assert [await writer.prune_file(path) for path in gone] == [1, 1]
        report = await copy_source(lite, store, source, "local")
    finally:
        await lite.close()
    assert report.outcomes == {"added": 2, "unchanged": 4}
    assert report.verified


def test_the_command_copies_every_source_the_user_has(
    tmp_path: Path, pg_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "data"
    assert main(["import", "prompts", str(FIXTURES / "prompts"), "--data-dir", str(data)]) == 0
    capsys.readouterr()
    assert main(["migrate", "--to", pg_url, "--data-dir", str(data), "--json"]) == 0
    out = capsys.readouterr().out
    assert '"source": "prompts"' in out and '"verified": true' in out
    assert '"source": "notes"' not in out  # no notes database: nothing to copy
