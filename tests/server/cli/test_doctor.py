"""`knowledge-mcp doctor` says in one screen what state an install is in, and exits 1 with the fix
when something is wrong; `knowledge-mcp` alone says how to begin."""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from knowledge_mcp.server.cli import doctor
from knowledge_mcp.server.cli.dispatch import build_parser
from knowledge_mcp.server.cli.doctor import Context, Finding
from knowledge_mcp.sources.storage.db import database_path
from tests.conftest import FIXTURES, ROOT, cli_import

CLI = str(Path(sys.executable).with_name("knowledge-mcp"))


def run(*args: str, home: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """The real command, with HOME in the test's folder so no real host config is read."""
    environ = {k: v for k, v in os.environ.items() if k not in ("XDG_CONFIG_HOME", "CLAUDE_CONFIG_DIR")}
    environ.update(HOME=str(home), **env)
    return subprocess.run([CLI, *args], capture_output=True, text=True, timeout=120, cwd=ROOT, env=environ)


def line(out: str, topic: str) -> str:
    found = [row for row in out.splitlines() if re.match(rf"^\S+\s+{re.escape(topic)}\s", row)]
    assert found, f"no {topic!r} line in:\n{out}"
    return found[0]


def test_no_arguments_print_a_three_line_getting_started_on_stdout(tmp_path: Path) -> None:
    done = run(home=tmp_path)
    assert done.returncode == 0 and not done.stderr
    lines = done.stdout.strip().splitlines()
    assert len(lines) == 3
    for command in (
        "knowledge-mcp import notes",
        "knowledge-mcp setup claude-desktop",
        "knowledge-mcp doctor",
    ):
        assert command in done.stdout


def test_doctor_on_a_fresh_data_dir_says_how_to_begin_and_exits_0(tmp_path: Path) -> None:
    done = run("doctor", "--data-dir", str(tmp_path / "data"), home=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert line(done.stdout, "version").startswith("ok")
    assert "does not exist yet" in line(done.stdout, "data dir")
    assert "knowledge-mcp import notes" in line(done.stdout, "data dir")
    assert "not set up for claude-desktop, claude-code, cursor" in line(done.stdout, "hosts")
    assert done.stdout.rstrip().endswith("no problems found")
    assert not (tmp_path / "data").exists()  # doctor looks, it never makes


def test_doctor_counts_each_user_s_items_and_how_much_is_embedded(tmp_path: Path) -> None:
    data = tmp_path / "data"
    cli_import("notes", FIXTURES / "notes", data)
    cli_import("prompts", FIXTURES / "prompts", data)
    with sqlite3.connect(database_path(data, "local", "notes")) as conn:
        items = conn.execute("SELECT count(*) FROM notes_items").fetchone()[0]
        chunks = conn.execute("SELECT count(*) FROM notes_chunks").fetchone()[0]
    done = run("doctor", "--data-dir", str(data), home=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 user(s): local" in line(done.stdout, "data dir")
    local = line(done.stdout, "user local")
    assert f"notes {items} items ({chunks} chunks, 0 % embedded: 0 of {chunks:,})" in local
    assert "prompts " in local
    assert "knowledge-mcp embed" in done.stdout


def test_doctor_on_a_damaged_database_exits_1_naming_the_file_and_the_fix(tmp_path: Path) -> None:
    data = tmp_path / "data"
    cli_import("prompts", FIXTURES / "prompts", data)
    notes = database_path(data, "local", "notes")
    notes.write_bytes(b"this was a notes database once" * 100)
    done = run("doctor", "--data-dir", str(data), home=tmp_path)
    assert done.returncode == 1
    failed = line(done.stdout, "notes db")
    assert failed.startswith("FAIL") and str(notes) in failed and "damaged" in failed
    assert "fix: run `knowledge-mcp repair notes` (it keeps the damaged file aside" in done.stdout
    assert "prompts 5 items" in line(done.stdout, "user local")  # the other sources are still counted
    assert "1 problem(s) to fix" in done.stdout and "Traceback" not in done.stderr


def test_doctor_on_a_data_dir_that_is_a_file_exits_1(tmp_path: Path) -> None:
    (tmp_path / "data").write_text("not a folder", "utf-8")
    done = run("doctor", "--data-dir", str(tmp_path / "data"), home=tmp_path)
    assert done.returncode == 1
    assert line(done.stdout, "data dir").startswith("FAIL") and "is not a folder" in done.stdout


def test_doctor_with_a_broken_config_file_names_the_setting_and_exits_1(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text("[search]\nsnipet_length = 10\n", "utf-8")
    done = run("doctor", "--config", str(config), home=tmp_path)
    assert done.returncode == 1
    assert line(done.stdout, "config").startswith("FAIL") and "snipet_length" in done.stdout
    assert line(done.stdout, "version").startswith("ok")  # the other checks still ran


def test_doctor_never_shows_the_database_password_when_postgresql_is_unreachable(tmp_path: Path) -> None:
    url = "postgresql://knowledge:hunter2-secret@127.0.0.1:1/knowledge"
    done = run("doctor", "--data-dir", str(tmp_path / "data"), home=tmp_path, KNOWLEDGE_MCP_DATABASE_URL=url)
    assert done.returncode == 1
    failed = line(done.stdout, "PostgreSQL")
    assert failed.startswith("FAIL") and "127.0.0.1:1/knowledge: cannot connect" in failed
    assert "KNOWLEDGE_MCP_DATABASE_URL" in line(done.stdout, "config")  # the name, never the value
    assert "hunter2" not in done.stdout + done.stderr


def test_doctor_names_the_hosts_that_start_this_install_another_one_or_nothing_at_all(tmp_path: Path) -> None:
    data = tmp_path / "data"
    assert run("setup", "claude-code", "--data-dir", str(data), home=tmp_path).returncode == 0
    cursor = tmp_path / ".cursor" / "mcp.json"
    cursor.parent.mkdir()
    gone = {"command": str(tmp_path / "old-venv" / "bin" / "knowledge-mcp"), "args": ["serve"]}
    cursor.write_text(json.dumps({"mcpServers": {"knowledge": gone}}), "utf-8")
    other = tmp_path / "other-venv" / "bin" / "knowledge-mcp"
    other.parent.mkdir(parents=True)
    other.write_text("#!/bin/sh\n", "utf-8")
    desktop = tmp_path / ".config" / "Claude" / "claude_desktop_config.json"
    desktop.parent.mkdir(parents=True)
    desktop.write_text(json.dumps({"mcpServers": {"notes": {"command": str(other), "args": []}}}), "utf-8")
    done = run("doctor", "--data-dir", str(data), home=tmp_path)
    assert done.returncode == 1
    code = line(done.stdout, "claude-code")
    assert code.startswith("ok") and "as 'knowledge'" in code and f"data dir {data.resolve()}" in code
    assert line(done.stdout, "cursor").startswith("FAIL") and "does not exist" in done.stdout
    assert "fix: knowledge-mcp setup cursor --name knowledge --force" in done.stdout
    elsewhere = line(done.stdout, "claude-desktop")
    assert elsewhere.startswith("--") and f"'notes' starts another install, {other}" in elsewhere
    assert "hint: knowledge-mcp setup claude-desktop --name notes --force" in done.stdout
    assert "hosts" not in [row.split()[1] for row in done.stdout.splitlines() if row.strip()]


async def _broken(ctx: Context) -> list[Finding]:
    raise RuntimeError("a bug in a check")


@pytest.mark.anyio
async def test_a_check_that_raises_is_a_fail_line_and_the_others_still_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(doctor, "CHECKS", (_broken, *doctor.CHECKS[:1]))
    args = build_parser().parse_args(["doctor", "--data-dir", str(tmp_path / "data")])
    assert await doctor.run_doctor(args) == 1
    out = capsys.readouterr().out
    assert line(out, "broken").startswith("FAIL") and "RuntimeError" in out
    assert line(out, "version").startswith("ok")


def test_doctor_with_a_reachable_postgresql_names_its_version_and_what_is_kept_there(
    tmp_path: Path, pg_url: str
) -> None:
    done = run(
        "doctor", "--data-dir", str(tmp_path / "data"), home=tmp_path, KNOWLEDGE_MCP_DATABASE_URL=pg_url
    )
    assert done.returncode == 0, done.stdout + done.stderr
    reached = line(done.stdout, "PostgreSQL")
    assert reached.startswith("ok") and re.search(r": PostgreSQL \d+", reached)
    assert "sessions, keys and limits in it; items in the data dir" in reached


def test_doctor_warns_while_libraries_may_log_content(tmp_path: Path) -> None:
    quiet = run("doctor", "--data-dir", str(tmp_path / "data"), home=tmp_path)
    loud = run(
        "doctor", "--data-dir", str(tmp_path / "data"), home=tmp_path, KNOWLEDGE_MCP_LOG_LIBRARY_DEBUG="true"
    )
    assert line(quiet.stdout, "logging").startswith("ok") and "libraries at WARNING" in quiet.stdout
    assert line(loud.stdout, "logging").startswith("warn") and "log_library_debug = false" in loud.stdout
    assert loud.returncode == 0  # a warning, not a failure


def test_doctor_fails_with_the_fix_once_pgvector_crashed_the_postgresql_item_store(
    tmp_path: Path, pg_url: str
) -> None:
    """The crash switch (`vector_mode`) drops pgvector's HNSW index: doctor names it, and the fix.
    Where the run's pgvector cannot run on this CPU the store has exact vectors from the start,
    which doctor says as a note."""
    import psycopg

    env = {"KNOWLEDGE_MCP_DATABASE_URL": pg_url, "KNOWLEDGE_MCP_ITEM_STORE": "postgresql"}
    data = str(tmp_path / "data")
    imported = run("import", "notes", str(FIXTURES / "notes"), "--data-dir", data, home=tmp_path, **env)
    assert imported.returncode == 0, imported.stdout + imported.stderr
    with psycopg.connect(pg_url, autocommit=True) as conn:
        kind = conn.execute(
            "SELECT format_type(atttypid, atttypmod) FROM pg_attribute "
            "WHERE attrelid = 'pg_chunk_vectors'::regclass AND attname = 'embedding'"
        ).fetchone()
    assert kind is not None
    healthy = run("doctor", "--data-dir", data, home=tmp_path, **env)
    if not str(kind[0]).startswith("vector"):
        assert line(healthy.stdout, "PostgreSQL vectors").startswith("--") and "real[]" in healthy.stdout
        return
    assert line(healthy.stdout, "PostgreSQL vectors").startswith("ok"), healthy.stdout
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("DROP INDEX pg_chunk_vectors_hnsw")
    crashed = run("doctor", "--data-dir", data, home=tmp_path, **env)
    assert crashed.returncode == 1
    assert line(crashed.stdout, "PostgreSQL vectors").startswith("FAIL"), crashed.stdout
    assert "another CPU" in crashed.stdout and "CREATE INDEX pg_chunk_vectors_hnsw" in crashed.stdout
