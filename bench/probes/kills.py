"""Probe 3, kill -9 during imports: a folder of notes imported cleanly into one data dir, and
into another while `knowledge-mcp import` is SIGKILLed at random moments (seeded) N times; then
a last import runs to the end. The killed dir must hold exactly the clean dir's items (none lost,
none twice), chunks and search index the same size, and every database pass
`PRAGMA integrity_check`.
"""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from knowledge_mcp.bench.http import server_env
from knowledge_mcp.bench.scifact_notes import documents, note_text

IMPORT_TIMEOUT_S = 300.0
WORDS = ["protein", "cell", "sleep", "memory", "gene", "cancer", "immune", "vitamin", "brain", "heart"]


def notes_folder(out: Path, count: int, corpus: Path | None) -> Path:
    """`count` Markdown notes from a BEIR corpus (SciFact), or made up when there is none."""
    out.mkdir(parents=True, exist_ok=True)
    if corpus is not None and corpus.exists():
        for n, (doc_id, title, text) in enumerate(documents(corpus)):
            if n >= count:
                break
            (out / f"{doc_id}.md").write_text(note_text(title, text), encoding="utf-8")
    else:
        for n in range(count):
            text = " ".join(WORDS[(n + k) % len(WORDS)] for k in range(200))
            (out / f"note-{n}.md").write_text(note_text(f"Note {n}", text), encoding="utf-8")
    return out


def import_command(folder: Path, data_dir: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "knowledge_mcp",
        "import",
        "notes",
        str(folder),
        "--data-dir",
        str(data_dir),
    ]


def run_import(folder: Path, data_dir: Path) -> float:
    t0 = time.perf_counter()
    subprocess.run(
        import_command(folder, data_dir),
        env=server_env(),
        check=True,
        capture_output=True,
        timeout=IMPORT_TIMEOUT_S,
    )
    return time.perf_counter() - t0


def killed_import(folder: Path, data_dir: Path, after_s: float) -> bool:
    """Start an import and SIGKILL it after `after_s`; whether it was still running then."""
    process = subprocess.Popen(
        import_command(folder, data_dir),
        env=server_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        process.wait(timeout=after_s)
        return False
    except subprocess.TimeoutExpired:
        os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=30)
        return True


def contents(data_dir: Path) -> dict[str, Any]:
    """What the notes database holds: items by file, chunks, index rows, and each db's integrity."""
    db = next(data_dir.glob("users/*/notes.db"))
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT source_path, content_hash FROM notes_items").fetchall()
        chunks = conn.execute("SELECT count(*) FROM notes_chunks").fetchone()[0]
        indexed = conn.execute("SELECT count(*) FROM notes_chunks_fts").fetchone()[0]
    checks = {}
    for path in sorted(data_dir.rglob("*.db")):
        with sqlite3.connect(path) as conn:
            checks[str(path.relative_to(data_dir))] = conn.execute("PRAGMA integrity_check").fetchone()[0]
    return {"rows": rows, "chunks": chunks, "indexed": indexed, "integrity": checks}


def probe(work: Path, notes: int, kills: int, seed: int, corpus: Path | None) -> dict[str, Any]:
    folder = notes_folder(work / "notes", notes, corpus)
    clean_s = run_import(folder, work / "clean")
    clean = contents(work / "clean")
    rng = random.Random(seed)
    killed_while_running = 0
    for _ in range(kills):
        killed_while_running += killed_import(
            folder, work / "killed", rng.uniform(0.4 * clean_s, 1.05 * clean_s)
        )
    run_import(folder, work / "killed")
    after = contents(work / "killed")
    clean_rows, rows = set(clean["rows"]), after["rows"]
    not_ok = {name: result for name, result in after["integrity"].items() if result != "ok"}
    return {
        "notes": notes,
        "kills": kills,
        "killed_while_running": killed_while_running,
        "clean_import_s": round(clean_s, 2),
        "items_clean": len(clean["rows"]),
        "items_after": len(rows),
        "lost": len(clean_rows - set(rows)),
        "duplicated": len(rows) - len(set(rows)),
        "extra": len(set(rows) - clean_rows),
        "chunks_clean": clean["chunks"],
        "chunks_after": after["chunks"],
        "index_rows_after": after["indexed"],
        "integrity_checks": len(after["integrity"]),
        "integrity_not_ok": not_ok,
    }
