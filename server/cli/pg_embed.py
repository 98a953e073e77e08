"""`knowledge-mcp embed` and `import … --embed` with `item_store = "postgresql"`: the user's
missing vectors computed into the PostgreSQL item store (`dense/pg/indexing.py`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from knowledge_mcp.sources.search.dense.embedder import Embedder
from knowledge_mcp.sources.search.dense.indexing import EmbedReport
from knowledge_mcp.sources.search.dense.pg.indexing import embed_missing_pg
from knowledge_mcp.sources.storage.postgres.migrations import migrate
from knowledge_mcp.sources.storage.postgres.pool import open_pg
from knowledge_mcp.sources.storage.postgres.schema import COMPONENT, MIGRATIONS
from knowledge_mcp.sources.storage.postgres.vectors import coverage

from .embedding import ProgressLine

if TYPE_CHECKING:
    from ..config import Settings


async def run_pg_embed(
    url: str, settings: Settings, sources: list[str], model: Embedder
) -> dict[str, EmbedReport]:
    """Embed the missing chunks of each of the user's sources that has chunks in the store."""
    pg = await open_pg(url)
    reports: dict[str, EmbedReport] = {}
    try:
        await migrate(pg, COMPONENT, MIGRATIONS)
        for name in sources:
            if not (await coverage(pg, settings.user, name)).chunks:
                continue
            line = ProgressLine(name)
            try:
                reports[name] = await embed_missing_pg(pg, settings.user, name, model, line)
            finally:
                line.close()
    finally:
        await pg.close()
    return reports
