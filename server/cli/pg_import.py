"""`knowledge-mcp import` into the PostgreSQL item store (`item_store = "postgresql"`), and
`knowledge-mcp embed` / `import … --embed` there: the user's missing vectors computed into the
store (`dense/indexing.embed_missing` over its `PgVectorStore`)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from knowledge_mcp.sources.registry import get_source
from knowledge_mcp.sources.search.dense.embedder import Embedder
from knowledge_mcp.sources.search.dense.indexing import EmbedReport, embed_missing
from knowledge_mcp.sources.storage.postgres.embeddings.store import PgVectorStore
from knowledge_mcp.sources.storage.postgres.migrations import migrate
from knowledge_mcp.sources.storage.postgres.pool import open_pg
from knowledge_mcp.sources.storage.postgres.schema import COMPONENT, MIGRATIONS
from knowledge_mcp.sources.storage.postgres.writing import PgItemWriter
from knowledge_mcp.sources.storage.runs import ImportSummary

from .embedding import ProgressLine

if TYPE_CHECKING:
    from ..config import Settings


async def run_pg_import(
    url: str, settings: Settings, source_name: str, paths: list[Path], prune: bool
) -> ImportSummary:
    """Import `paths` as `settings.user`'s items of `source_name` into the store at `url`: the
    SQLite import's walk, skips and parsers (`runs.ImportRun`), PostgreSQL's writer."""
    pg = await open_pg(url)
    try:
        await migrate(pg, COMPONENT, MIGRATIONS)
        max_bytes = int(settings.import_max_file_mb * 1024 * 1024)
        writer = PgItemWriter(pg, get_source(source_name), settings.user, max_file_bytes=max_bytes)
        return await writer.run(paths, prune=prune)
    finally:
        await pg.close()


async def run_pg_embed(
    url: str, settings: Settings, sources: list[str], model: Embedder
) -> dict[str, EmbedReport]:
    """Embed the missing chunks of each of the user's sources that has chunks in the store."""
    pg = await open_pg(url)
    reports: dict[str, EmbedReport] = {}
    try:
        await migrate(pg, COMPONENT, MIGRATIONS)
        for name in sources:
            store = PgVectorStore(pg, settings.user, name)
            if not (await store.coverage()).chunks:
                continue
            line = ProgressLine(name)
            try:
                reports[name] = await embed_missing(store, model, line)
            finally:
                line.close()
    finally:
        await pg.close()
    return reports
