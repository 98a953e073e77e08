"""The fuser's candidates per query, recorded through the project's own search pipeline.

A `RecordingFuser` is the default `HybridFuser` that also keeps what it was given: the union of
the lexical and the dense pools (`fusion.candidates`), each with its calibrated bm25 score and
its cosine. `collect` runs every query of a BEIR split through the notes source's pipeline
with that fuser (`mode = hybrid`, the eval's limit), so the fit sees exactly what a search sees.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from knowledge_mcp.sources.models import SearchResponse
from knowledge_mcp.sources.notes import source as notes
from knowledge_mcp.sources.retrieval import Defaults
from knowledge_mcp.sources.search.dense import fusion
from knowledge_mcp.sources.search.dense.retriever import DenseFound
from knowledge_mcp.sources.search.pipeline import SearchPipeline
from knowledge_mcp.sources.search.query import ParsedQuery
from knowledge_mcp.sources.search.request import Found, SearchContext, SearchRequest
from knowledge_mcp.sources.search.scoring import Norm, calibrated
from knowledge_mcp.sources.storage.db import Database
from knowledge_mcp.sources.storage.store.sqlite import SqliteStore

from ..evaluation import K_RECALL


@dataclass(frozen=True)
class Candidate:
    """One candidate of one query: its document, the fuser's two signals and its bm25 rank."""

    doc: str
    rowid: int
    lexical: float
    """The calibrated bm25 score (that of no match when no query word matched it)."""
    cosine: float
    lexical_rank: int | None = None


@dataclass(frozen=True)
class QueryCandidates:
    qid: str
    relevant: dict[str, int]
    candidates: tuple[Candidate, ...]


class RecordingFuser(fusion.HybridFuser):
    """The hybrid fuser, keeping the last pool it fused and what calibrates its bm25 (the query's
    own term count, its norm and the bm25 scale), as the fuser itself does."""

    def __init__(self) -> None:
        super().__init__()
        self.last: tuple[dict[int, fusion.Candidate], int, Norm | None, float] | None = None

    async def fuse(self, ctx: SearchContext, query: ParsedQuery, found: Sequence[Found]) -> Found:
        dense = next((f for f in found if isinstance(f, DenseFound)), None)
        lexical = next((f for f in found if not isinstance(f, DenseFound)), None)
        if dense is not None:
            dense = await dense.complete()
            norm = lexical.norm if lexical is not None else None
            pool = fusion.candidates(lexical, dense, 1.0 / query.boost)
            self.last = (pool, len(query.own_terms), norm, lexical.scale if lexical is not None else 1.0)
            found = [f if not isinstance(f, DenseFound) else dense for f in found]
        return await super().fuse(ctx, query, found)


async def doc_ids(db: Database) -> dict[int, str]:
    """Each item's rowid → its BEIR document id (the part of its origin after `#`)."""
    rows = await db.fetchall("SELECT id, origin FROM notes_items")
    return {int(r[0]): str(r[1]).split("#", 1)[-1] for r in rows}


def as_candidates(
    pool: dict[int, fusion.Candidate], terms: int, norm: Norm | None, scale: float, doc_of: dict[int, str]
) -> tuple[Candidate, ...]:
    return tuple(
        Candidate(
            doc_of[c.item],
            c.item,
            calibrated(c.bm25 if c.bm25 is not None else 0.0, terms, norm, scale),
            c.cosine,
            c.lexical_rank,
        )
        for c in pool.values()
    )


async def collect(
    db: Database, queries: dict[str, str], qrels: dict[str, dict[str, int]], qids: list[str]
) -> list[QueryCandidates]:
    """Every query's candidates, as the hybrid search of the notes source fuses them."""
    recorder = RecordingFuser()
    pipeline = SearchPipeline(fuser=recorder)
    model: Any = SearchResponse[notes.result_model]  # type: ignore[name-defined]
    doc_of = await doc_ids(db)
    out = []
    for qid in qids:
        recorder.last = None
        request = SearchRequest(queries[qid], limit=K_RECALL, mode="hybrid")
        await pipeline.run(notes, SqliteStore(db, "notes"), request, Defaults(), model)
        pool = as_candidates(*recorder.last, doc_of) if recorder.last is not None else ()
        out.append(QueryCandidates(qid, qrels[qid], pool))
    return out
