"""`knowledge-mcp search` with `--item-store postgresql` reads the PostgreSQL item store: files
imported into PostgreSQL only (the SQLite files have nothing) are found, in real processes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import FIXTURES
from tests.test_cli import cli

pytestmark = pytest.mark.slow


def test_search_on_postgresql_finds_what_was_imported_into_postgresql_only(
    tmp_path: Path, pg_url: str
) -> None:
    data_dir = str(tmp_path / "data")
    store = ["--data-dir", data_dir, "--item-store", "postgresql", "--database-url", pg_url]
    for source in ("notes", "prompts"):
        imported = cli("import", source, str(FIXTURES / source), *store, "--json")
        assert imported.returncode == 0, imported.stderr
        assert json.loads(imported.stdout)["added"] > 0

    found = cli("search", "levain autolyse", "--json", *store)
    lite = cli("search", "levain autolyse", "--json", "--data-dir", data_dir)
    one = cli("search", "levain", "--json", "--source", "prompts", *store)

    assert found.returncode == 0, found.stderr
    results = json.loads(found.stdout)["results"]
    assert results and "sourdough" in results[0]["title"].lower()
    assert results[0]["uri"].startswith("notes://") and results[0]["rank"] == 1
    assert pg_url not in found.stderr and pg_url not in found.stdout  # the URL is never shown
    assert lite.returncode == 0 and json.loads(lite.stdout)["results"] == []  # nothing in SQLite
    assert one.returncode == 0 and json.loads(one.stdout)["results"] == []  # only the source asked


def test_search_on_postgresql_shows_another_user_nothing(tmp_path: Path, pg_url: str) -> None:
    data_dir = str(tmp_path / "data")
    store = ["--data-dir", data_dir, "--item-store", "postgresql", "--database-url", pg_url]
    imported = cli("import", "notes", str(FIXTURES / "notes" / "recipes"), *store, "--user", "alice")
    assert imported.returncode == 0, imported.stderr

    alice = cli("search", "levain", "--json", *store, "--user", "alice")
    bob = cli("search", "levain", "--json", *store, "--user", "bob")

    assert alice.returncode == 0 and json.loads(alice.stdout)["results"], alice.stderr
    assert bob.returncode == 0, bob.stderr
    assert json.loads(bob.stdout)["results"] == []
