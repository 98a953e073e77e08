"""A note written on a PostgreSQL server tells the background embedding worker: it gets its
vectors without waiting for the worker's next look (no search in between), and a semantic search
then finds it; once the notes have vectors, the duplicate check compares by their cosines."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import anyio
from mcp import Client

from knowledge_mcp.server.app import build_server
from knowledge_mcp.server.cli.commands import run_import
from knowledge_mcp.server.config import Settings
from knowledge_mcp.sources.storage.vector_store import Coverage

from ...conftest import call
from .test_pg_dense import DENSE_NOTES
from .test_pg_dense_background import WAIT_S, covered

FERMENT = (
    "Kimchi diary: napa cabbage salted overnight, rinsed, then packed with gochugaru, garlic, "
    "ginger and fish sauce into a crock left on the counter for three days before the fridge."
)
BOILER = (
    "Boiler engineer visit: the pressure had dropped, so he refilled it to 1.5 bar and fitted a "
    "new thermocouple for the pilot light; paid the invoice by card, next service in March."
)


async def _until(url: str, *, more_than: int = 0) -> Coverage:
    """Poll the store (not the server: a search would itself tell the worker) within WAIT_S."""
    deadline, cover = time.monotonic() + WAIT_S, Coverage(0, 0)
    while time.monotonic() < deadline:
        cover = await covered(url, "local")
        if cover.complete and cover.chunks > more_than:
            return cover
        await anyio.sleep(0.5)
    return cover


async def create_and_find(tmp_path: Path, url: str) -> None:
    vault = Path(shutil.copytree(DENSE_NOTES, tmp_path / "vault"))
    settings = Settings(
        data_dir=tmp_path / "data", item_store="postgresql", database_url=url, rate_limit_per_minute=0
    )
    assert (await run_import(settings, "notes", [vault], False)).added == 3
    mcp, host = build_server(settings)
    try:
        async with Client(mcp) as client:
            host.start_background()
            await call(client, "notes_search", query="reading")  # the worker's first look
            before = await _until(url)
            assert before.complete and before.chunks >= 3
            made = await call(client, "notes_create", title="Fermenting", content=FERMENT)
            after = await _until(url, more_than=before.chunks)
            assert after.complete and after.chunks > before.chunks  # the new note's chunks embedded
            found = await call(client, "notes_search", query="making spicy pickled cabbage", mode="semantic")
            again = await call(client, "notes_create", title="Boiler visit", content=BOILER)
    finally:
        await host.close()
    assert "degraded" not in found
    assert found["results"][0]["uri"] == made["uri"]
    assert again["provider"] == "dense"  # compared by the notes' vectors in pg_chunk_vectors
    assert again["duplicates"][0]["title"] == "Boiler service"


def test_a_note_created_on_postgresql_gets_its_vectors_and_later_notes_are_compared_by_them(
    tmp_path: Path, pg_url: str
) -> None:
    anyio.run(create_and_find, tmp_path, pg_url)
