"""The advisory duplicate check of a write (seed 000's `write_entry`): similar notes, measured
within a time budget, never blocking the write.

Candidates are the notes a lexical search for the new text's top terms finds. Each is then
compared with the new text: by the cosine of their embeddings when the model is installed and
the candidate's chunks all have vectors (`search/dense`: the new text's first window is embedded
as a query is, while the search runs, and compared with each of the candidate's stored window
vectors; the best counts), else by its word and word-pair counts (`similarity.resemblance`).
`provider` says which measured. Past the budget the check gives up and the write answers
`duplicate_check_timeout`. On the PostgreSQL item store the candidates come from its own
lexical search (`PgStore`, bm25 in SQL) and are compared by the same cosines, with their windows'
vectors read from `pg_chunk_vectors` (`stores.PgNotes`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from ...retrieval import Defaults
from ...search.dense import embedder as models
from ...search.dense.sqlite.vectors import embedded_text
from ...search.request import SearchRequest
from ..source import source
from .models import MENTION, Duplicate, DuplicateCheck, Provider
from .similarity import resemblance, top_terms
from .stores import NoteStore

CANDIDATES = 8
SHOWN = 3


async def check(
    notes: NoteStore, title: str, text: str, *, exclude: str | None, budget_ms: float, defaults: Defaults
) -> DuplicateCheck:
    """The check for a note titled `title` with body `text` (`exclude`: the note's own id), among
    the user's `notes`.

    The model is loaded (once per process) before the budget starts, and only when the
    notes have vectors to compare with: without them the check is lexical and loads nothing."""
    if budget_ms <= 0:
        return DuplicateCheck()
    model = await asyncio.to_thread(models.embedder) if await notes.has_vectors() else None
    try:
        return await asyncio.wait_for(_check(notes, model, title, text, exclude, defaults), budget_ms / 1000)
    except TimeoutError:
        return DuplicateCheck(timed_out=True)


async def _check(
    notes: NoteStore,
    model: models.Embedder | None,
    title: str,
    text: str,
    exclude: str | None,
    defaults: Defaults,
) -> DuplicateCheck:
    # The new text's embedding (its first window, as a query is) runs while the search does.
    embedding = (
        asyncio.create_task(asyncio.to_thread(model.embed_query, embedded_text(title, text)))
        if model
        else None
    )
    try:
        terms = top_terms(f"{title}\n{text}")
        request = SearchRequest(" ".join(terms), limit=CANDIDATES + 1, mode="lexical", details=False)
        db = notes.store
        found = await source.search(db, request, defaults) if terms else None
        ids = [r.id for r in found.results if r.id != exclude][:CANDIDATES] if found else []
        if not ids:
            return DuplicateCheck(provider=_provider(model is not None, model is None))
        items = [item for item in [await db.item(i) for i in ids] if item is not None]
        dense = await _dense_scores(notes, await embedding, items) if embedding is not None else {}
    finally:
        if embedding is not None and not embedding.done():
            embedding.cancel()
    scored: list[Duplicate] = []
    for item in items:
        similarity = dense.get(item["id"])
        if similarity is None:
            similarity = resemblance(f"{title}\n{text}", f"{item['title']}\n{item['content']}")
        uri = source.uri(item["item_id"])
        scored.append(Duplicate(uri=uri, title=item["title"], similarity=round(similarity, 3)))
    scored.sort(key=lambda d: -d.similarity)
    provider = _provider(bool(dense), len(dense) < len(items))
    return DuplicateCheck(
        duplicates=[d for d in scored if d.similarity >= MENTION][:SHOWN], provider=provider
    )


def _provider(dense: bool, lexical: bool) -> Provider:
    if dense and lexical:
        return "dense+lexical"
    return "dense" if dense else "lexical"


async def _dense_scores(
    notes: NoteStore, new: npt.NDArray[np.float32], items: Sequence[Any]
) -> dict[int, float]:
    """Each candidate's best window cosine with the new text's vector (by rowid), for the
    candidates whose chunks all have vectors; empty when none has."""
    found = await notes.window_vectors([int(item["id"]) for item in items])
    return {rowid: _best(matrix, new) for rowid, matrix in found.items()}


def _best(matrix: npt.NDArray[np.float32], new: npt.NDArray[np.float32]) -> float:
    """The best cosine of `new` with a candidate's window vectors (rows of `matrix`), in [0, 1]."""
    return float(np.clip((matrix @ new).max(), 0.0, 1.0))
