"""The `item_store` setting: where items live, and the one sentence when PostgreSQL has no URL."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from knowledge_mcp.server.config import ConfigError, load_settings
from tests.conftest import ROOT

NEEDS_URL = "item_store = postgresql needs database_url (a postgresql:// URL)"


def test_items_stay_in_sqlite_unless_the_setting_says_postgresql() -> None:
    assert load_settings(None).item_store == "sqlite"
    chosen = load_settings(None, item_store="postgresql", database_url="postgresql://kb@db.example.org/kb")
    assert chosen.item_store == "postgresql"


def test_postgresql_items_without_a_database_url_is_one_sentence() -> None:
    with pytest.raises(ConfigError) as caught:
        load_settings(None, item_store="postgresql")
    assert str(caught.value) == NEEDS_URL


def test_the_import_command_refuses_postgresql_items_without_a_url(tmp_path: Path) -> None:
    command = [sys.executable, "-m", "knowledge_mcp", "import", "notes", str(tmp_path)]
    command += ["--data-dir", str(tmp_path / "data"), "--item-store", "postgresql"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert done.returncode == 1
    assert done.stderr.strip() == f"knowledge-mcp: {NEEDS_URL}"
