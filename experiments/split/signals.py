"""What the score calibration is fitted on: every candidate's signals, recorded through the real
search pipeline of the notes source over a BEIR split (SciFact train).

A `Recorder` is the default `HybridFuser` that also keeps what it fused: per candidate its bm25,
its bm25 rank, its cosine, and per query the term count and the norm (`scoring.Norm`).
`collect` runs every query through the pipeline (`mode = hybrid`, limit 100) and labels each
candidate with the qrels; `nonsense_cosines` is the best cosine of queries of random letters
(for the floor of `fusion.py`), `pair_cosines` the cosine of relevant and of random
(query, document) pairs.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from knowledge_mcp.sources.models import SearchResponse
from knowledge_mcp.sources.notes import source as notes
from knowledge_mcp.sources.retrieval import Defaults
from knowledge_mcp.sources.search.dense import fusion
from knowledge_mcp.sources.search.dense.evidence import probes
from knowledge_mcp.sources.search.dense.retriever import DenseFound
from knowledge_mcp.sources.search.pipeline import SearchPipeline
from knowledge_mcp.sources.search.query import ParsedQuery
from knowledge_mcp.sources.search.request import Found, SearchContext, SearchRequest
from knowledge_mcp.sources.search.scoring import Norm
from knowledge_mcp.sources.storage.db import Database
from knowledge_mcp.sources.storage.store.sqlite import SqliteStore

SEED = 15
RANDOM_PER_QUERY = 10


@dataclass(frozen=True)
class Signal:
    doc: str
    rowid: int
    bm25: float | None
    lexical_rank: int | None
    cosine: float
    relevant: bool


@dataclass(frozen=True)
class QuerySignals:
    qid: str
    relevant: dict[str, int]
    terms: int
    norm: Norm | None
    best_cosine: float
    random_cosines: tuple[float, ...]
    """The query's cosine with a few documents picked at random."""
    candidates: tuple[Signal, ...]


@dataclass(frozen=True)
class Fused:
    pool: dict[int, fusion.Candidate]
    terms: int
    norm: Norm | None
    best: float
    random: tuple[float, ...]


class Recorder(fusion.HybridFuser):
    """The hybrid fuser, keeping the last pool it fused, the term count and the idf mass."""

    def __init__(self) -> None:
        super().__init__()
        self.last: Fused | None = None
        self.rng = random.Random(SEED)

    async def fuse(self, ctx: SearchContext, query: ParsedQuery, found: Sequence[Found]) -> Found:
        dense = next((f for f in found if isinstance(f, DenseFound)), None)
        lexical = next((f for f in found if not isinstance(f, DenseFound)), None)
        if dense is not None:
            dense = await dense.complete()  # its query embedded meanwhile (dense/retriever.py)
            found = [f if not isinstance(f, DenseFound) else dense for f in found]
            pool = fusion.candidates(lexical, dense)
            mass = lexical.norm if lexical is not None else None
            best = float(dense.best.max()) if len(dense.best) else 0.0
            picks = (
                [self.rng.randrange(len(dense.best)) for _ in range(RANDOM_PER_QUERY)]
                if len(dense.best)
                else []
            )
            sample = tuple(float(dense.best[i]) for i in picks)
            self.last = Fused(pool, len(query.terms), mass, best, sample)
        return await super().fuse(ctx, query, found)


async def doc_ids(db: Database) -> dict[int, str]:
    """Each item's rowid → its BEIR document id (the part of its origin after `#`)."""
    rows = await db.fetchall("SELECT id, origin FROM notes_items")
    return {int(r[0]): str(r[1]).split("#", 1)[-1] for r in rows}


async def run_one(pipeline: SearchPipeline, recorder: Recorder, db: Database, text: str) -> Fused | None:
    recorder.last = None
    model: Any = SearchResponse[notes.result_model]  # type: ignore[name-defined]
    await pipeline.run(
        notes, SqliteStore(db, "notes"), SearchRequest(text, limit=100, mode="hybrid"), Defaults(), model
    )
    return recorder.last


async def collect(
    db: Database, queries: dict[str, str], qrels: dict[str, dict[str, int]], qids: list[str]
) -> list[QuerySignals]:
    """Every query's candidates with their signals and labels."""
    recorder = Recorder()
    pipeline = SearchPipeline(fuser=recorder)
    doc_of = await doc_ids(db)
    out = []
    for qid in qids:
        last = await run_one(pipeline, recorder, db, queries[qid])
        if last is None:
            continue
        rel = qrels[qid]
        signals = tuple(
            Signal(doc_of[c.item], c.item, c.bm25, c.lexical_rank, c.cosine, doc_of[c.item] in rel)
            for c in last.pool.values()
        )
        out.append(QuerySignals(qid, rel, last.terms, last.norm, last.best, last.random, signals))
    return out


def nonsense_queries(count: int, seed: int = SEED) -> list[str]:
    """Queries of 1–4 random lowercase 'words' of 5–9 letters: nothing a corpus holds (drawn as
    the semantic floor's probes are, from another seed)."""
    return probes(count, seed)


async def nonsense_cosines(db: Database, count: int = 200) -> list[tuple[float, bool]]:
    """Each nonsense query's best cosine, and whether any of its words matched lexically."""
    recorder = Recorder()
    pipeline = SearchPipeline(fuser=recorder)
    out = []
    for text in nonsense_queries(count):
        last = await run_one(pipeline, recorder, db, text)
        if last is not None:
            out.append((last.best, any(c.bm25 is not None for c in last.pool.values())))
    return out


def pair_cosines(queries: Sequence[QuerySignals]) -> tuple[list[float], list[float]]:
    """The cosines of relevant (query, document) pairs among the candidates, and of random
    pairs (each query with a few documents picked at random)."""
    relevant = [c.cosine for q in queries for c in q.candidates if c.relevant]
    return relevant, [x for q in queries for x in q.random_cosines]
