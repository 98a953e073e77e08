"""`knowledge-mcp embed` in real processes: killed half-way it keeps every batch it committed,
and the next run embeds only what is left, every chunk once."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from knowledge_mcp.sources.storage.db import database_path
from tests.conftest import FIXTURES, ROOT


def paragraph_notes(folder: Path, most: int = 100) -> int:
    """The first `most` paragraphs of the notes fixtures, each a note of its own: short chunks,
    so batches (of 32) commit often. Returns how many notes."""
    folder.mkdir(parents=True)
    count = 0
    for note in sorted((FIXTURES / "notes").rglob("*.md")):
        for paragraph in note.read_text(encoding="utf-8").split("\n\n"):
            if len(paragraph.strip()) >= 40 and not paragraph.startswith("---") and count < most:
                (folder / f"{count:04d}.md").write_text(paragraph.strip() + "\n", encoding="utf-8")
                count += 1
    return count


def cli(data_dir: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "knowledge_mcp", *args, "--data-dir", str(data_dir)]


def counts(data_dir: Path) -> tuple[int, int, int]:
    """(chunks, chunks with vectors, stored texts); zeros while the tables do not exist yet."""
    path = database_path(data_dir, "local", "notes")
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=10)
        try:
            row = conn.execute(
                "SELECT (SELECT count(*) FROM notes_chunks), (SELECT count(*) FROM notes_chunk_vectors), "
                "(SELECT count(*) FROM notes_vectors)"
            ).fetchone()
            return int(row[0]), int(row[1]), int(row[2])
        finally:
            conn.close()
    except sqlite3.OperationalError:
        return 0, 0, 0


def test_embed_killed_mid_run_keeps_its_batches_and_a_rerun_embeds_only_the_rest(tmp_path: Path) -> None:
    notes = paragraph_notes(tmp_path / "vault")
    data_dir = tmp_path / "data"
    imported = subprocess.run(
        cli(data_dir, "import", "notes", str(tmp_path / "vault")), capture_output=True, timeout=120, cwd=ROOT
    )
    assert imported.returncode == 0, imported.stderr
    chunks = counts(data_dir)[0]
    assert chunks >= notes == 100

    process = subprocess.Popen(
        cli(data_dir, "embed"), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=ROOT
    )
    try:
        deadline = time.monotonic() + 120
        while counts(data_dir)[1] == 0 and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        process.send_signal(signal.SIGKILL)
    finally:
        if process.poll() is None:
            process.kill()
        _, stderr = process.communicate(timeout=30)
    assert process.returncode == -signal.SIGKILL, f"embed ended before it could be killed: {stderr!r}"
    _, kept, texts = counts(data_dir)
    assert 0 < kept < chunks and texts >= 1

    rerun = subprocess.run(cli(data_dir, "embed"), capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert rerun.returncode == 0, rerun.stderr
    assert f"{chunks - kept} given vectors this run" in rerun.stdout
    assert f"embedding notes: {chunks}/{chunks} chunks (100 %" in rerun.stderr
    total, linked, stored = counts(data_dir)
    assert (total, linked) == (chunks, chunks)
    # Every text embedded once: the rerun embedded exactly the texts the killed run had not.
    assert f"({stored - texts} text(s) embedded" in rerun.stdout

    again = subprocess.run(cli(data_dir, "embed"), capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert "0 given vectors this run (0 text(s) embedded" in again.stdout
