"""Probe 3, kill -9 during imports: a folder of notes imported into one data dir, then N rounds
of: every note revised, `knowledge-mcp import` started and SIGKILLed at a random moment (seeded)
after it opened the notes database; then a last import runs to the end (`killed_midway`: rounds
whose kill left some notes revised and some not). That data dir must hold
exactly what a clean import of the final folder into a fresh data dir holds (no item lost, none
twice, the same chunks and search index rows), and every database pass `PRAGMA integrity_check`.
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

from experiments.scifact_notes import documents, note_text
from knowledge_mcp.bench.http import server_env

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


def import_command(folder: Path, data_dir: Path, source: str = "notes") -> list[str]:
    return [sys.executable, "-m", "knowledge_mcp", "import", source, str(folder), "--data-dir", str(data_dir)]


def import_folder(source: str, folder: Path, data_dir: Path, *extra: str) -> None:
    command = [*import_command(folder, data_dir, source), *extra]
    done = subprocess.run(command, env=server_env(), capture_output=True, timeout=IMPORT_TIMEOUT_S, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"import exited {done.returncode}: {done.stdout[-2000:]} {done.stderr[-2000:]}")


def opened_db(pid: int) -> bool:
    """Whether process `pid` holds a notes database open (Linux /proc; elsewhere: assume so)."""
    fds = Path(f"/proc/{pid}/fd")
    if not fds.exists():
        return True
    try:
        return any(os.readlink(fd).endswith("notes.db") for fd in fds.iterdir())
    except OSError:
        return False


def timed_import(folder: Path, data_dir: Path, kill_after: float | None = None) -> tuple[float, float, bool]:
    """Run an import: seconds until it opened the notes database, seconds in all, and whether
    it was SIGKILLed (`kill_after` seconds after it opened the database, while still running)."""
    t0 = time.perf_counter()
    command = import_command(folder, data_dir)
    process = subprocess.Popen(
        command, env=server_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    opened = None
    while process.poll() is None and opened is None and time.perf_counter() - t0 < IMPORT_TIMEOUT_S:
        if opened_db(process.pid):
            opened = time.perf_counter() - t0
        time.sleep(0.002)
    opened = time.perf_counter() - t0 if opened is None else opened
    try:
        process.wait(timeout=IMPORT_TIMEOUT_S if kill_after is None else kill_after)
    except subprocess.TimeoutExpired:
        os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=30)
        return opened, time.perf_counter() - t0, True
    if process.returncode != 0:
        raise RuntimeError(f"probes: {' '.join(command)} exited with {process.returncode}")
    return opened, time.perf_counter() - t0, False


def revise(folder: Path, revision: int) -> None:
    """Change every note (a line added), so the next import rewrites each item and its chunks."""
    for path in sorted(folder.glob("*.md")):
        text = path.read_text(encoding="utf-8").split("\n\nRevision ")[0]
        path.write_text(f"{text}\n\nRevision {revision}.\n", encoding="utf-8")


def contents(data_dir: Path) -> dict[str, Any]:
    """What the notes database holds: items by file, chunks, index rows, and each db's integrity."""
    db = next(data_dir.glob("users/*/notes.db"))
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT source_path, content_hash FROM notes_items").fetchall()
        chunks = conn.execute("SELECT count(*) FROM notes_chunks").fetchone()[0]
        indexed = conn.execute("SELECT count(*) FROM notes_chunks_fts").fetchone()[0]
    return {"rows": rows, "chunks": chunks, "indexed": indexed, "integrity": integrity(data_dir)}


def integrity(data_dir: Path) -> dict[str, str]:
    """`PRAGMA integrity_check`'s first line for every database under `data_dir`."""
    checks = {}
    for path in sorted(data_dir.rglob("*.db")):
        with sqlite3.connect(path) as conn:
            checks[str(path.relative_to(data_dir))] = str(
                conn.execute("PRAGMA integrity_check").fetchone()[0]
            )
    return checks


def revised_items(data_dir: Path, revision: int) -> int:
    """How many items already hold `revision` (0 < n < all: the kill came midway)."""
    db = next(data_dir.glob("users/*/notes.db"))
    with sqlite3.connect(db) as conn:
        sql = "SELECT count(*) FROM notes_items WHERE content LIKE ?"
        return int(conn.execute(sql, (f"%Revision {revision}.%",)).fetchone()[0])


def probe(work: Path, notes: int, kills: int, seed: int, corpus: Path | None) -> dict[str, Any]:
    """Kill `kills` imports at random moments while they write (each round revises every note,
    so each import has all of them to rewrite), import once more to the end, and compare with a
    clean import of the same folder into a fresh data dir."""
    folder = notes_folder(work / "notes", notes, corpus)
    opened_s, total_s, _ = timed_import(folder, work / "killed")  # also the kill window's length
    rng = random.Random(seed)
    killed_while_running = midway = 0
    for revision in range(1, kills + 1):
        revise(folder, revision)
        moment = rng.uniform(0.0, max((total_s - opened_s) * 1.5, 0.01))
        killed_while_running += timed_import(folder, work / "killed", moment)[2]
        revised = revised_items(work / "killed", revision)
        midway += 0 < revised < notes
    timed_import(folder, work / "killed")
    after = contents(work / "killed")
    clean_s = timed_import(folder, work / "clean")[1]
    clean = contents(work / "clean")
    clean_rows, rows = set(clean["rows"]), after["rows"]
    not_ok = {name: result for name, result in after["integrity"].items() if result != "ok"}
    return {
        "notes": notes,
        "kills": kills,
        "killed_while_running": killed_while_running,
        "killed_midway": midway,
        "clean_import_s": round(clean_s, 2),
        "kill_window_s": round(total_s - opened_s, 2),
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
