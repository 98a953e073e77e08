"""Reading one item (the `*_get` tools, DESIGN §6): find it, find the anchor chunk its `loc` or
query points at, and return the window of its text the retrieval mode and budget allow, with
how to go on. The window arithmetic itself is pure (`retrieval.py`).
"""

from __future__ import annotations

from typing import Any, Protocol

import aiosqlite

from .errors import NotFoundError
from .models import GetResponse, Loc, NextStep, Retrieval
from .retrieval import Budget, Defaults, Span, chunk_window, estimate_tokens, full_window, resolve_budget
from .search.lexical.sql import build_anchor_sql
from .search.query import parse_query
from .storage.db import Database
from .text.snippets import make_snippet

ITEM_BY_ID_SQL = "SELECT * FROM {p}_items WHERE item_id = ?"
CHUNKS_OF_ITEM_SQL = "SELECT * FROM {p}_chunks WHERE item_rowid = ? ORDER BY chunk_index"

Rows = list[aiosqlite.Row]


class ReadableSource(Protocol):
    """What reading needs of a source: its tables, result and anchors (`ChunkedSource`)."""

    @property
    def name(self) -> str: ...

    @property
    def id_field(self) -> str: ...

    def result(self, item: aiosqlite.Row, chunk: aiosqlite.Row | None, **hit: Any) -> Any: ...

    def loc(self, item: aiosqlite.Row, chunk: aiosqlite.Row) -> Loc: ...

    def anchor_from_loc(self, loc: Loc, chunks: Rows) -> int | None: ...


async def load_item(db: Database, source: ReadableSource, item_id: str) -> tuple[aiosqlite.Row, Rows]:
    """The item's row and its chunks in order; NotFoundError names the source's id field."""
    item = await db.fetchone(ITEM_BY_ID_SQL.format(p=source.name), (item_id,))
    if item is None:
        raise NotFoundError(source.id_field, item_id, f"use an id from {source.name}_search results")
    chunks = await db.fetchall(CHUNKS_OF_ITEM_SQL.format(p=source.name), (item["id"],))
    return item, chunks


async def find_anchor(
    db: Database,
    source: ReadableSource,
    item: aiosqlite.Row,
    chunks: Rows,
    loc: Loc | None,
    query: str | None,
) -> int:
    """The chunk index to read from: the one `loc` names, else the best match of `query` in
    this item, else the first."""
    if loc is not None:
        anchor = source.anchor_from_loc(loc, chunks)
        if anchor is not None:
            return anchor
    parsed = parse_query(query or "")
    if not parsed.is_empty and chunks:
        row = await db.fetchone(build_anchor_sql(source.name), (parsed.match_expression(), item["id"]))
        if row is not None:
            return int(row[0])
    return 0


async def get(
    db: Database,
    source: ReadableSource,
    item_id: str,
    model: type[Any],
    *,
    loc: Loc | None,
    query: str | None,
    retrieval: Retrieval | None,
    defaults: Defaults,
) -> GetResponse[Any]:
    """The item as `model` (the source's GetResponse): its meta and the window to read."""
    warnings: list[str] = []
    budget = resolve_budget(retrieval, defaults, warnings)
    item, chunks = await load_item(db, source, item_id)
    anchor = await find_anchor(db, source, item, chunks, loc, query) if chunks else 0
    meta = source.result(item, chunks[anchor] if chunks else None, snippet="", score=1.0, rank=1)
    content, truncated, next_step = window(source, item, chunks, anchor, budget, loc, query)
    meta.snippet = make_snippet(content, budget.snippet_length) if content else ""
    return model(  # type: ignore[no-any-return]
        meta=meta,
        content=content,
        mode_used=budget.mode,
        estimated_tokens=estimate_tokens(content, budget.chars_per_token),
        truncated=truncated,
        next=next_step,
        warnings=warnings,
    )


def window(
    source: ReadableSource,
    item: aiosqlite.Row,
    chunks: Rows,
    anchor: int,
    budget: Budget,
    loc: Loc | None,
    query: str | None,
) -> tuple[str, bool, NextStep | None]:
    """The text to return for the budget's mode, whether it was cut, and how to go on."""
    text: str = item["content"]
    if budget.mode == "full" or not chunks:
        start = loc.approx_offset if loc is not None and loc.approx_offset is not None else 0
        w = full_window(text, start, budget)
        nxt = None
        if w.truncated:
            nxt = NextStep(
                loc=Loc(approx_offset=w.end), retrieval={"mode": "full", "max_tokens": budget.max_tokens}
            )
        return text[w.start : w.end], w.truncated, nxt
    spans = [Span(c["start_offset"], c["end_offset"]) for c in chunks]
    if budget.mode == "snippet":
        snippet_budget = min(budget.snippet_length, budget.max_chars)
        body = chunks[anchor]["body"]
        snippet = make_snippet(body, snippet_budget, _first_match(body, query))
        nxt = NextStep(loc=source.loc(item, chunks[anchor]), retrieval={"mode": "chunk"})
        return snippet, len(snippet) < len(body), nxt
    w = chunk_window(text, spans, anchor, budget, siblings=budget.mode == "chunk_with_siblings")
    nxt = None
    if w.truncated:
        nxt = NextStep(
            loc=Loc(approx_offset=w.end), retrieval={"mode": "full", "max_tokens": budget.max_tokens}
        )
    elif w.last_chunk + 1 < len(chunks):
        nxt = NextStep(loc=source.loc(item, chunks[w.last_chunk + 1]), retrieval={"mode": budget.mode})
    return text[w.start : w.end], w.truncated, nxt


def _first_match(body: str, query: str | None) -> int | None:
    """A cheap position of the first query word in `body`, for centring a get snippet."""
    lowered = body.lower()
    positions = [lowered.find(t.words[0][:5]) for t in parse_query(query or "").terms]
    found = [p for p in positions if p >= 0]
    return min(found) if found else None
