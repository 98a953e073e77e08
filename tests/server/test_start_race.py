"""Starts never race: two servers and an import started together on a fresh data dir create and
migrate every database (sources, sessions, keys) once, whoever comes first, and log no
traceback. Real processes (one per role, each going through 50 fresh data dirs in step with
the others, so the race is run 50 times without paying 150 interpreter starts). Without the
schema lock: 56 tracebacks in 150 starts ("table notes_items already exists", "table api_keys
already exists"); with migrations alone locked, switching a new file to WAL still failed once
("database is locked")."""

from __future__ import annotations

import multiprocessing
import sqlite3
from pathlib import Path

from knowledge_mcp.server.auth.keys import keys_path
from tests.server import start_race_worker

ROUNDS = 50
ROLES = ("serve", "serve", "import")


def test_two_servers_and_an_import_started_together_fifty_times_log_no_traceback(tmp_path: Path) -> None:
    spawn = multiprocessing.get_context("spawn")
    barrier, results = spawn.Barrier(len(ROLES)), spawn.Queue()
    workers = [
        spawn.Process(target=start_race_worker.run, args=(role, str(tmp_path), ROUNDS, barrier, results))
        for role in ROLES
    ]
    for worker in workers:
        worker.start()
    reports = [results.get(timeout=240) for _ in workers]
    for worker in workers:
        worker.join(timeout=30)
    assert [w.exitcode for w in workers] == [0, 0, 0]
    problems = [line for _, lines in reports for line in lines]
    assert problems == [], "\n".join(problems[:5])
    for n in range(ROUNDS):
        home = tmp_path / f"data-{n}" / "users" / "local"
        conn = sqlite3.connect(home / "notes.db")
        try:
            assert conn.execute("SELECT count(*) FROM notes_items").fetchone()[0] > 0
        finally:
            conn.close()
        assert (home / "sessions.db").exists()
        assert keys_path(tmp_path / f"data-{n}").exists()
