"""The SciFact notes folder for timing imports: one note per document, titles that survive YAML."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from experiments.scifact_notes import raw_fts5, timed_import, write_notes
from tests.conftest import import_into

DOCS = [
    {"_id": "4983", "title": "Microstructural development: white matter", "text": "Diffusion tensor MRI."},
    {"_id": "5836", "title": 'Quotes "inside" and a # hash', "text": "Induction of myelodysplasia."},
    {"_id": "7912", "title": "- starts like a YAML list", "text": "BC1 RNA, the transcript."},
]


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    path = tmp_path / "corpus.jsonl"
    path.write_text("".join(json.dumps(d) + "\n" for d in DOCS), encoding="utf-8")
    return path


@pytest.mark.anyio
async def test_each_document_becomes_a_note_whose_title_is_the_documents_title(
    corpus: Path, tmp_path: Path, data_dir: Path
) -> None:
    assert write_notes(corpus, tmp_path / "notes") == 3
    summary = await import_into(data_dir, "notes", tmp_path / "notes")
    assert (summary.added, summary.files_failed) == (3, 0)
    db = data_dir / "users" / "local" / "notes.db"
    conn = sqlite3.connect(db)
    try:
        titles = {row[0] for row in conn.execute("SELECT title FROM notes_items")}
    finally:
        conn.close()
    assert titles == {d["title"] for d in DOCS}


def test_the_raw_fts5_baseline_inserts_every_document(corpus: Path, tmp_path: Path) -> None:
    count, elapsed = raw_fts5(corpus, tmp_path / "raw.db")
    assert count == 3 and elapsed >= 0


def test_a_timed_import_runs_outside_the_working_clone_so_another_clones_python_runs_its_own_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`python -m` puts the working folder first on the path: run from a clone, `--before PYTHON`
    would time this clone's code."""
    seen = tmp_path / "seen.txt"
    python = tmp_path / "python"
    python.write_text(f'#!/bin/sh\npwd > "{seen}"\necho "{{}}"\n', encoding="utf-8")
    python.chmod(0o755)
    clone = tmp_path / "clone"
    (clone / "knowledge_mcp").mkdir(parents=True)
    monkeypatch.chdir(clone)
    timed_import(Path("notes"), tmp_path / "data", str(python))
    ran_in = Path(seen.read_text(encoding="utf-8").strip())
    assert ran_in != clone and not (ran_in / "knowledge_mcp").exists()
