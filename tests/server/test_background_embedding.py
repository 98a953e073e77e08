"""Embeddings built in the background while the server serves: a freshly imported vault is
searched lexically (saying how much is built) until the worker has embedded it, then hybrid;
`embed_in_background = false` keeps it lexical; stopping the worker mid-run keeps every batch
it finished and the next run completes, embedding each text once."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import IO, Any

import anyio
import pytest
from mcp import Client

from knowledge_mcp.server.app import build_server
from knowledge_mcp.server.config import Settings, load_settings
from knowledge_mcp.sources.notes import source as notes
from knowledge_mcp.sources.search.background import BackgroundIndexer, background_model
from knowledge_mcp.sources.search.dense.model import Embedder
from knowledge_mcp.sources.search.dense.sqlite.store import SqliteVectorStore
from knowledge_mcp.sources.storage.db import Database, database_path, open_database
from tests.conftest import FIXTURES, ROOT, call, import_into, score_types, serve_args

DENSE_NOTES = ROOT / "tests" / "sources" / "search" / "dense" / "notes"
QUESTION = "which novels did I enjoy last summer?"
WAIT_S = 180.0
"""A generous bound for the worker to embed the small vault on a busy machine (not a timing
assertion: the tests poll and stop as soon as it is done)."""


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    """A data dir with the real-world notes fixtures and the semantic notes, no vectors."""
    folder = tmp_path / "vault"
    shutil.copytree(FIXTURES / "notes", folder, ignore=shutil.ignore_patterns("huge-field-guide.md"))
    for note in DENSE_NOTES.glob("*.md"):
        shutil.copy(note, folder)
    data_dir = tmp_path / "data"
    anyio.run(import_into, data_dir, "notes", folder)
    return data_dir


async def counts(data_dir: Path) -> tuple[int, int, int]:
    """(chunks, chunks with vectors, stored texts), read on a connection of the test's own."""
    db = await open_database(database_path(data_dir, "local", "notes"), notes.migrations)
    try:
        row = await db.fetchone(
            "SELECT (SELECT count(*) FROM notes_chunks), (SELECT count(*) FROM notes_chunk_vectors), "
            "(SELECT count(*) FROM notes_vectors)"
        )
        assert row is not None
        return int(row[0]), int(row[1]), int(row[2])
    finally:
        await db.close()


class StdioServer:
    """`knowledge-mcp serve` over stdio, driven line by line: every line it writes on stdout
    must be a JSON-RPC message."""

    def __init__(self, data_dir: Path, **env: str) -> None:
        base = {k: v for k, v in os.environ.items() if not k.startswith("KNOWLEDGE_MCP_")}
        self.process = subprocess.Popen(
            [sys.executable, *serve_args(data_dir)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**base, **env},
            cwd=str(ROOT),
            text=True,
        )
        self.next_id = 0

    def send(self, message: dict[str, Any]) -> None:
        stdin: IO[str] | None = self.process.stdin
        assert stdin is not None
        stdin.write(json.dumps(message) + "\n")
        stdin.flush()

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        assert self.process.stdout is not None
        while True:
            line = self.process.stdout.readline()
            assert line, "the server ended its output"
            message = json.loads(line)  # anything else on stdout would break the protocol
            assert message.get("jsonrpc") == "2.0", line
            if message.get("id") == self.next_id:
                assert "result" in message, message
                return dict(message["result"])

    def initialize(self) -> None:
        info = {"name": "pytest", "version": "1.0"}
        self.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": info})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def search(self, query: str) -> dict[str, Any]:
        args = {"query": query, "limit": 3, "seen": "show"}
        result = self.request("tools/call", {"name": "knowledge_search", "arguments": args})
        assert not result.get("isError"), result
        return dict(result["structuredContent"])

    def close(self) -> int:
        assert self.process.stdin is not None
        self.process.stdin.close()
        try:
            return self.process.wait(timeout=60)
        finally:
            if self.process.poll() is None:
                self.process.kill()
            for stream in (self.process.stdout, self.process.stderr):
                if stream is not None:
                    stream.close()


def test_over_stdio_a_fresh_vault_answers_lexically_saying_it_builds_then_hybrid(vault: Path) -> None:
    server = StdioServer(vault)
    try:
        server.initialize()
        first = server.search(QUESTION)
        assert first["degraded"] is True
        assert "notes: dense index" in first["provider_hint"] and "background" in first["provider_hint"]
        deadline = time.monotonic() + WAIT_S
        page = first
        while "degraded" in page and time.monotonic() < deadline:
            time.sleep(0.5)
            page = server.search(QUESTION)
        assert "degraded" not in page and "provider_hint" not in page
        assert set(score_types(page)) == {"hybrid"}
        assert "July reading" in [hit["title"] for hit in page["results"]]
    finally:
        code = server.close()
    assert code == 0
    chunks, embedded, _ = anyio.run(counts, vault)
    assert embedded == chunks


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
async def test_with_background_embedding_off_searches_stay_lexical_and_name_the_embed_command(
    vault: Path,
) -> None:
    mcp, host = build_server(Settings(data_dir=vault, embed_in_background=False))
    try:
        host.start_background()
        async with Client(mcp) as client:
            for _ in range(3):
                page = await call(client, "knowledge_search", query=QUESTION, limit=3, seen="show")
                assert page["degraded"] is True
                assert "dense index 0 % built" in page["provider_hint"]
                assert "`knowledge-mcp embed`" in page["provider_hint"]
                await anyio.sleep(0.2)
    finally:
        await host.pool.close()
    assert host.pool.background is None
    chunks, embedded, _ = await counts(vault)
    assert chunks > 0 and embedded == 0


def test_the_environment_turns_background_embedding_off(monkeypatch: pytest.MonkeyPatch) -> None:
    assert Settings().embed_in_background is True
    monkeypatch.setenv("KNOWLEDGE_MCP_EMBED_IN_BACKGROUND", "false")
    assert load_settings().embed_in_background is False


async def _wait_for(data_dir: Path, done: Any) -> tuple[int, int, int]:
    with anyio.fail_after(WAIT_S):
        while not done(found := await counts(data_dir)):
            await anyio.sleep(0.05)
    return found


async def _noticed(indexer: BackgroundIndexer, data_dir: Path) -> Database:
    db = await open_database(database_path(data_dir, "local", "notes"), notes.migrations)
    indexer.start()
    indexer.notice(SqliteVectorStore(db, notes, notes.migrations))
    return db


@pytest.mark.anyio
async def test_a_worker_stopped_mid_run_keeps_its_batches_and_the_next_run_embeds_only_the_rest(
    vault: Path,
) -> None:
    first = BackgroundIndexer(batch=2, pause_s=0, idle_s=float("inf"))  # small batches throughout
    db = await _noticed(first, vault)
    try:
        await _wait_for(vault, lambda c: c[1] > 0)
        await first.stop()
    finally:
        await db.close()
    chunks, embedded, texts = await counts(vault)
    stopped = next(iter(first.reports.values()))
    assert stopped.stopped and 0 < embedded < chunks and texts == stopped.embedded

    second = BackgroundIndexer(batch=8, pause_s=0)
    db = await _noticed(second, vault)
    try:
        await _wait_for(vault, lambda c: c[1] == c[0])
        while not second.reports:  # the run's report is kept once its last batch is in
            await anyio.sleep(0.05)
    finally:
        await second.stop()
        await db.close()
    chunks, embedded, texts = await counts(vault)
    done = next(iter(second.reports.values()))
    assert embedded == chunks and not done.stopped
    assert stopped.embedded + done.embedded == texts  # every text embedded once
    assert stopped.linked + done.linked == chunks


@pytest.mark.anyio
async def test_a_worker_embeds_chunks_imported_after_its_last_look(vault: Path, tmp_path: Path) -> None:
    indexer = BackgroundIndexer(recheck_s=0, pause_s=0)
    db = await _noticed(indexer, vault)
    try:
        await _wait_for(vault, lambda c: c[1] == c[0])
        before = (await counts(vault))[0]
        later = tmp_path / "later"
        later.mkdir()
        (later / "Offsite again.md").write_text(
            (DENSE_NOTES / "Team offsite.md").read_text(encoding="utf-8") + "\nBooked the train back.\n",
            encoding="utf-8",
        )
        await import_into(vault, "notes", later)
        indexer.notice(SqliteVectorStore(db, notes, notes.migrations))
        chunks, embedded, _ = await _wait_for(vault, lambda c: c[0] > before and c[1] == c[0])
        assert embedded == chunks
    finally:
        await indexer.stop()
        await db.close()


class CountedLoads:
    """The worker's real model loader, counting its loads."""

    def __init__(self) -> None:
        self.loads = 0

    def __call__(self) -> Embedder | None:
        self.loads += 1
        return background_model()


async def _let_go(indexer: BackgroundIndexer) -> None:
    with anyio.fail_after(WAIT_S):
        while indexer.holding:
            await anyio.sleep(0.05)


@pytest.mark.anyio
async def test_the_worker_lets_its_model_go_when_idle_and_loads_it_again_for_new_chunks(
    vault: Path, tmp_path: Path
) -> None:
    loader = CountedLoads()
    indexer = BackgroundIndexer(loader, recheck_s=0, pause_s=0)
    db = await _noticed(indexer, vault)
    try:
        await _wait_for(vault, lambda c: c[1] == c[0])
        await _let_go(indexer)
        assert loader.loads == 1
        later = tmp_path / "later"
        later.mkdir()
        (later / "Reading list.md").write_text("# Reading list\n\nThe Left Hand of Darkness, again.\n")
        await import_into(vault, "notes", later)
        indexer.notice(SqliteVectorStore(db, notes, notes.migrations))
        await _wait_for(vault, lambda c: c[1] == c[0])
        await _let_go(indexer)
    finally:
        await indexer.stop()
        await db.close()
    assert loader.loads == 2 and not indexer.holding


@pytest.mark.anyio
async def test_a_look_at_a_source_with_every_vector_loads_no_model(vault: Path) -> None:
    first = BackgroundIndexer(recheck_s=0, pause_s=0)
    db = await _noticed(first, vault)
    try:
        await _wait_for(vault, lambda c: c[1] == c[0])
    finally:
        await first.stop()
    loader = CountedLoads()
    second = BackgroundIndexer(loader, recheck_s=0)
    second.start()
    try:
        second.notice(SqliteVectorStore(db, notes, notes.migrations))
        with anyio.fail_after(WAIT_S):
            while second.looks < 1:
                await anyio.sleep(0.05)
    finally:
        await second.stop()
        await db.close()
    assert loader.loads == 0 and not second.holding


@pytest.mark.anyio
async def test_a_request_paces_the_worker_and_a_write_noticed_does_not(vault: Path) -> None:
    indexer = BackgroundIndexer(idle_s=3600)
    db = await open_database(database_path(vault, "local", "notes"), notes.migrations)
    try:
        assert not indexer.busy()  # no request yet: full batches, no pause
        indexer.notice(SqliteVectorStore(db, notes, notes.migrations), force=True)
        assert not indexer.busy()  # `serve --watch` wrote it: no request
        indexer.notice(SqliteVectorStore(db, notes, notes.migrations))
        assert indexer.busy()
        assert not BackgroundIndexer(idle_s=0).busy()
    finally:
        await db.close()


@pytest.mark.anyio
async def test_a_search_through_the_server_is_noted_by_its_worker(vault: Path) -> None:
    mcp, host = build_server(Settings(data_dir=vault))
    try:
        host.start_background()
        worker = host.pool.background
        assert worker is not None
        before = time.monotonic()
        async with Client(mcp) as client:
            await call(client, "knowledge_search", query=QUESTION, limit=3)
        assert worker.served >= before  # so its next batch is small and paced
    finally:
        await host.pool.close()
