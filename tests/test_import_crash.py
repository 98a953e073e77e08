"""The real importer CLI: crash consistency (SIGKILL mid-run, between and inside batches), idempotent
re-runs, prune, exit codes."""

from __future__ import annotations

import json
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from knowledge_mcp.sources.registry import get_source
from knowledge_mcp.sources.storage.db import database_path
from tests.conftest import FIXTURES, ROOT, import_into

pytestmark = pytest.mark.slow

GENERATED_NOTES = 400
EMPTY_EVERY = 80  # every 80th generated note is an empty file

TOPICS = {
    "homelab": ["proxmox", "zfs", "snapshot", "backup", "restic", "tailscale", "router", "vlan", "grafana"],
    "cooking": ["braise", "shallot", "stock", "miso", "fermentation", "knife", "pan", "brine", "umami"],
    "work": ["standup", "roadmap", "incident", "postgres", "latency", "rollout", "review", "oncall"],
    "reading": ["chapter", "argument", "author", "essay", "footnote", "memoir", "novel", "thesis", "margin"],
    "garden": ["tomato", "compost", "mulch", "seedling", "irrigation", "aphid", "trellis", "basil", "frost"],
}
FILLER = [
    "the",
    "a",
    "we",
    "then",
    "it",
    "was",
    "is",
    "and",
    "but",
    "so",
    "because",
    "after",
    "before",
    "while",
    "with",
    "without",
    "about",
    "maybe",
    "probably",
    "again",
    "later",
    "today",
    "still",
]


def generate_vault(folder: Path, count: int = GENERATED_NOTES, seed: int = 7) -> int:
    """Write `count` realistic-ish Markdown notes; returns how many are non-empty."""
    rng = random.Random(seed)
    non_empty = 0
    for n in range(count):
        topic = rng.choice(sorted(TOPICS))
        words = TOPICS[topic]
        path = folder / topic / f"{n:04d}-{rng.choice(words)}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        if n % EMPTY_EVERY == EMPTY_EVERY - 1:
            path.write_text("" if n % 2 else "  \n\n", encoding="utf-8")
            continue
        paragraphs = []
        for _ in range(rng.randint(3, 12)):
            sentences = []
            for _ in range(rng.randint(2, 6)):
                length = rng.randint(6, 18)
                picked = [rng.choice(words if rng.random() < 0.3 else FILLER) for _ in range(length)]
                sentences.append(" ".join(picked).capitalize() + ".")
            paragraphs.append(" ".join(sentences))
        title = f"{topic.title()} note {n}: {rng.choice(words)} and {rng.choice(words)}"
        created = f"2025-{1 + n % 12:02d}-{1 + n % 28:02d}"
        front = f'---\ntitle: "{title}"\ntags: [{topic}, generated]\ncreated: {created}\n---\n'
        path.write_text(front + f"# {title}\n\n" + "\n\n".join(paragraphs) + "\n", encoding="utf-8")
        non_empty += 1
    return non_empty


def non_empty_note_files(root: Path) -> int:
    extensions = get_source("notes").extensions
    return sum(
        1
        for p in root.rglob("*")
        if p.is_file()
        and p.suffix.lower() in extensions
        and not any(part.startswith(".") for part in p.relative_to(root).parts)
        and p.read_bytes().strip()
    )


def import_command(data_dir: Path, source: str, *paths: Path, extra: tuple[str, ...] = ()) -> list[str]:
    return [
        sys.executable,
        "-m",
        "knowledge_mcp",
        "import",
        source,
        *map(str, paths),
        "--data-dir",
        str(data_dir),
        "--json",
        *extra,
    ]


def run_import(
    data_dir: Path, source: str, *paths: Path, extra: tuple[str, ...] = ()
) -> tuple[int, dict[str, Any]]:
    done = subprocess.run(
        import_command(data_dir, source, *paths, extra=extra),
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert done.stdout.strip(), done.stderr
    return done.returncode, json.loads(done.stdout)


def connect(data_dir: Path, source: str) -> sqlite3.Connection:
    return sqlite3.connect(database_path(data_dir, "local", source), timeout=10)


def scalar(conn: sqlite3.Connection, sql: str, params: tuple[Any, ...] = ()) -> Any:
    return conn.execute(sql, params).fetchone()[0]


def item_count(data_dir: Path) -> int:
    """Items committed so far, or 0 while the database or its tables do not exist yet."""
    path = database_path(data_dir, "local", "notes")
    if not path.exists():
        return 0
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=10)
        try:
            return int(scalar(conn, "SELECT COUNT(*) FROM notes_items"))
        finally:
            conn.close()
    except sqlite3.OperationalError:
        return 0


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    """The notes fixtures (hidden folders and an empty note included) copied to tmp."""
    folder = tmp_path / "vault"
    shutil.copytree(FIXTURES / "notes", folder)
    return folder


def test_an_import_killed_mid_run_leaves_a_consistent_database_that_a_rerun_completes(
    vault: Path, tmp_path: Path
) -> None:
    generate_vault(vault / "generated")
    expected = non_empty_note_files(vault)
    assert expected > GENERATED_NOTES
    data_dir = tmp_path / "data"

    process = subprocess.Popen(
        import_command(data_dir, "notes", vault), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=ROOT
    )
    try:
        deadline = time.monotonic() + 60
        while item_count(data_dir) == 0 and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.005)
        process.send_signal(signal.SIGKILL)
    finally:
        if process.poll() is None:
            process.kill()
        _, stderr = process.communicate(timeout=30)
    assert process.returncode == -signal.SIGKILL, f"the import ended before it could be killed: {stderr!r}"
    partial = item_count(data_dir)
    assert 0 < partial < expected

    conn = connect(data_dir, "notes")
    try:
        assert scalar(conn, "PRAGMA integrity_check") == "ok"
        conn.execute("INSERT INTO notes_chunks_fts(notes_chunks_fts) VALUES('integrity-check')")
        conn.commit()
        # Files are written in batches, each file's record in the same transaction as its items:
        # no item without its file's record, no record without all its items.
        assert (
            scalar(
                conn,
                "SELECT COUNT(*) FROM notes_items i WHERE NOT EXISTS "
                "(SELECT 1 FROM notes_files f WHERE f.path = i.source_path)",
            )
            == 0
        )
        assert (
            scalar(
                conn,
                "SELECT COUNT(*) FROM notes_files f WHERE f.item_count != "
                "(SELECT COUNT(*) FROM notes_items i WHERE i.source_path = f.path)",
            )
            == 0
        )
    finally:
        conn.close()

    code, second = run_import(data_dir, "notes", vault)
    assert code == 0, second
    assert second["files_failed"] == 0
    assert second["added"] + second["unchanged"] == expected
    assert second["updated"] == 0

    conn = connect(data_dir, "notes")
    try:
        assert scalar(conn, "PRAGMA integrity_check") == "ok"
        conn.execute("INSERT INTO notes_chunks_fts(notes_chunks_fts) VALUES('integrity-check')")
        assert scalar(conn, "SELECT COUNT(*) FROM notes_items") == expected
        assert (
            scalar(
                conn,
                "SELECT COUNT(*) FROM (SELECT origin FROM notes_items GROUP BY origin HAVING COUNT(*) > 1)",
            )
            == 0
        )
        assert (
            scalar(
                conn,
                "SELECT COUNT(*) FROM notes_items i WHERE NOT EXISTS "
                "(SELECT 1 FROM notes_chunks c WHERE c.item_rowid = i.id)",
            )
            == 0
        )
        assert (
            scalar(
                conn,
                "SELECT COUNT(*) FROM notes_chunks c WHERE NOT EXISTS "
                "(SELECT 1 FROM notes_items i WHERE i.id = c.item_rowid)",
            )
            == 0
        )
        homelab = scalar(conn, "SELECT COUNT(*) FROM notes_items WHERE title LIKE 'Homelab note%'")
        assert homelab > 0
        assert (
            scalar(
                conn,
                "SELECT COUNT(DISTINCT c.item_rowid) FROM notes_chunks_fts f JOIN notes_chunks c "
                "ON c.id = f.rowid WHERE notes_chunks_fts MATCH 'title:homelab'",
            )
            == homelab
        )
    finally:
        conn.close()

    code, third = run_import(data_dir, "notes", vault)
    assert code == 0
    assert (third["added"], third["updated"], third["unchanged"]) == (0, 0, expected)


@pytest.mark.anyio
async def test_a_changed_file_is_updated_to_version_2_and_prune_removes_a_deleted_one(
    vault: Path, tmp_path: Path
) -> None:
    data_dir = tmp_path / "data"
    first = await import_into(data_dir, "notes", vault)
    assert first.added > 0
    changed = vault / "recipes" / "weeknight-dal.md"
    changed.write_text(
        changed.read_text(encoding="utf-8") + "\n\nAdded later: a spoon of tamarind paste.\n",
        encoding="utf-8",
    )
    deleted = vault / "recipes" / "creme-brulee.md"
    deleted.unlink()

    code, summary = run_import(data_dir, "notes", vault, extra=("--prune",))
    assert code == 0, summary
    assert summary["updated"] == 1
    assert summary["added"] == 0
    assert summary["pruned"] == 1
    assert summary["unchanged"] == first.added - 2

    conn = connect(data_dir, "notes")
    try:
        version, content = conn.execute(
            "SELECT version, content FROM notes_items WHERE source_path = ?", (str(changed.resolve()),)
        ).fetchone()
        assert version == 2
        assert "tamarind" in content
        gone = (str(deleted.resolve()),)
        assert scalar(conn, "SELECT COUNT(*) FROM notes_items WHERE source_path = ?", gone) == 0
        assert scalar(conn, "SELECT COUNT(*) FROM notes_files WHERE path = ?", gone) == 0
        assert (
            scalar(
                conn,
                "SELECT COUNT(*) FROM notes_chunks c WHERE NOT EXISTS "
                "(SELECT 1 FROM notes_items i WHERE i.id = c.item_rowid)",
            )
            == 0
        )
        assert (
            scalar(conn, "SELECT COUNT(*) FROM notes_chunks_fts WHERE notes_chunks_fts MATCH 'tamarind'") == 1
        )
    finally:
        conn.close()


def test_a_broken_file_exits_2_with_its_failure_while_an_empty_file_is_only_skipped(tmp_path: Path) -> None:
    media = tmp_path / "media"
    media.mkdir()
    shutil.copy(FIXTURES / "media" / "emails" / "team-thread.mbox", media)
    (media / "blank.txt").write_text("\n   \n", encoding="utf-8")
    runs = {
        "broken": subprocess.Popen(
            import_command(tmp_path / "a", "prompts", FIXTURES / "prompts", FIXTURES / "broken" / "prompts"),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        ),
        "clean": subprocess.Popen(
            import_command(tmp_path / "b", "media", media),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        ),
    }
    try:
        out = {name: process.communicate(timeout=120)[0] for name, process in runs.items()}
    finally:
        for process in runs.values():
            if process.poll() is None:
                process.kill()
                process.wait(timeout=10)

    assert runs["broken"].returncode == 2
    broken = json.loads(out["broken"])
    failed = {Path(f["path"]).name for f in broken["failures"]}
    assert failed == {p.name for p in (FIXTURES / "broken" / "prompts").iterdir()}
    assert all(f["reason"] for f in broken["failures"])
    assert broken["files_failed"] == len(failed)
    assert broken["added"] == len(list((FIXTURES / "prompts").iterdir()))  # the rest went on

    assert runs["clean"].returncode == 0
    clean = json.loads(out["clean"])
    assert clean["files_failed"] == 0 and clean["failures"] == []
    assert clean["skipped"] == 1
    assert [Path(n["path"]).name for n in clean["notices"]] == ["blank.txt"]
    assert clean["files_seen"] == 2
    assert clean["added"] > 1  # one .mbox file, many items


@pytest.mark.anyio
async def test_a_note_with_only_front_matter_is_found_by_its_title_or_skipped(
    tmp_path: Path, data_dir: Path, client_factory: Any
) -> None:
    folder = tmp_path / "vault"
    folder.mkdir()
    stub = "---\ntitle: Quarterly zeppelin budget\ntags: [finance]\n---\n"
    (folder / "stub.md").write_text(stub, encoding="utf-8")
    summary = await import_into(data_dir, "notes", folder)
    assert summary.files_failed == 0
    if summary.added == 0:  # skipped with a notice is fine
        assert summary.skipped == 1 and summary.notices
        return
    async with client_factory() as client:
        found = await client.call_tool("notes_search", {"query": "zeppelin"})
    assert not found.is_error
    assert found.structured_content["count"] == 1, "imported as an item, but no search can find it"
