"""Vectors reach the PostgreSQL item store while serving (the background worker) and at import
(`import --embed`): a freshly imported user is searched lexically, saying it builds, until the
worker has embedded their notes, then hybrid."""

from __future__ import annotations

import time
from pathlib import Path

import anyio
import pytest
from mcp import Client

from knowledge_mcp.server.app import build_server
from knowledge_mcp.server.cli.commands import run_import
from knowledge_mcp.server.cli.dispatch import main
from knowledge_mcp.server.config import Settings
from knowledge_mcp.sources.storage.postgres.embeddings.vectors import coverage
from knowledge_mcp.sources.storage.postgres.pool import open_pg
from knowledge_mcp.sources.storage.vector_store import Coverage

from ...conftest import call, score_types
from .test_pg_dense import DENSE_NOTES

QUESTION = {"query": "which novels did I enjoy last summer?", "limit": 3}
WAIT_S = 180.0
"""A generous bound for the worker on a busy machine (not a timing assertion: the test polls
and stops as soon as it is done)."""


async def covered(url: str, user: str) -> Coverage:
    pg = await open_pg(url)
    try:
        return await coverage(pg, user, "notes")
    finally:
        await pg.close()


async def serve_until_embedded(data_dir: Path, url: str) -> None:
    settings = Settings(data_dir=data_dir, user="ann", item_store="postgresql", database_url=url)
    summary = await run_import(settings, "notes", [DENSE_NOTES], False)
    assert summary.added == 3
    mcp, host = build_server(settings)
    try:
        async with Client(mcp) as client:
            host.start_background()
            first = await call(client, "knowledge_search", **QUESTION)
            assert first["degraded"] is True
            assert (
                "dense index 0 % built" in first["provider_hint"] and "background" in first["provider_hint"]
            )
            page, deadline = first, time.monotonic() + WAIT_S
            while "degraded" in page and time.monotonic() < deadline:
                await anyio.sleep(0.5)
                page = await call(client, "knowledge_search", **QUESTION)
            assert "degraded" not in page and "provider_hint" not in page
            assert set(score_types(page)) == {"hybrid"}
            assert page["results"][0]["title"] == "July reading"
    finally:
        await host.close()
    cover = await covered(url, "ann")
    assert cover.complete and cover.chunks > 0


def test_the_background_worker_fills_a_fresh_users_vectors_in_postgresql_while_serving(
    data_dir: Path, pg_url: str
) -> None:
    anyio.run(serve_until_embedded, data_dir, pg_url)


def test_import_with_embed_into_postgresql_leaves_every_chunk_with_its_vectors(
    data_dir: Path, pg_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    args = [
        "--data-dir",
        str(data_dir),
        "--user",
        "cy",
        "--item-store",
        "postgresql",
        "--database-url",
        pg_url,
    ]
    assert main(["import", "notes", str(DENSE_NOTES), "--embed", *args]) == 0
    cover = anyio.run(covered, pg_url, "cy")
    assert cover.complete and cover.chunks >= 3
    assert anyio.run(covered, pg_url, "ann") == Coverage(0, 0)  # another user has nothing
